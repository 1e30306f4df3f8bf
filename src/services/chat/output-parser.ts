/**
 * Splits a model's output, as it streams, into content, thinking (`<think>…</think>`) and tool calls
 * (in the convention of the model's template, see tool-calls.ts). Text that could be the start of a
 * marker is held back until the next delta tells, so a marker split across tokens never leaks into the
 * content. Whitespace around the blocks is trimmed the way chat UIs expect (`<think>\n…\n</think>\n\n`).
 * A tool-call block whose text is not a valid call is given back as content: no output is ever lost.
 */
import { type ParsedToolCall, parseToolCallText, type ToolFormat, toToolCall } from './tool-calls.ts';
import { type CallFragment, createCallFragmenter } from './call-fragments.ts';

export interface OutputDelta {
  content: string;
  thinking: string;
  /** Complete calls; with `streamCalls`, each was sent before as `callFragments` under the same index. */
  toolCalls: ParsedToolCall[];
  /** With `streamCalls`: pieces of calls as they are written (name first, then `arguments` text). */
  callFragments?: (CallFragment & { index: number })[];
}

export interface OutputParserOptions {
  /** Parse `<think>…</think>` blocks into thinking. */
  thinking: boolean;
  /** The prompt ended inside an open `<think>` block (templates that open it): output starts as thinking. */
  startInThinking?: boolean;
  /** Tool-call convention to parse; undefined = the request has no tools, nothing is parsed as a call. */
  tools?: ToolFormat;
  /**
   * Stream hermes calls in fragments as they are written. Only when the calls are constrained (they always
   * parse, see structured/triggered.ts): a fragment once sent cannot be taken back.
   */
  streamCalls?: boolean;
}

export interface OutputParser {
  push(text: string): OutputDelta;
  /** End of output: whatever was held back. */
  flush(): OutputDelta;
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const TOOL_OPEN = '<tool_call>';
const TOOL_CLOSE = '</tool_call>';
const MISTRAL = '[TOOL_CALLS]';
const PYTHON_TAG = '<|python_tag|>';

type Mode = 'content' | 'thinking' | 'tool' | 'tail';

export const emptyDelta = (): OutputDelta => ({ content: '', thinking: '', toolCalls: [] });
export const isEmptyDelta = (d: OutputDelta) => !d.content && !d.thinking && d.toolCalls.length === 0 && !d.callFragments?.length;

/** Length of the longest end of `s` that is a proper prefix of one of `markers`. */
function partialMarkerLength(s: string, markers: string[]): number {
  let best = 0;
  for (const m of markers) {
    for (let k = Math.min(m.length - 1, s.length); k > best; k--) {
      if (s.endsWith(m.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

export function createOutputParser(o: OutputParserOptions): OutputParser {
  let mode: Mode = o.startInThinking ? 'thinking' : 'content';
  let buf = '';
  let trimLead = mode === 'thinking';
  let sawContent = false;
  let toolBody = '';
  let tailPrefix = '';
  let anyCalls = false;
  let callCount = 0;
  let fragment: ReturnType<typeof createCallFragmenter> | undefined;

  const markers = (): string[] => {
    if (mode === 'thinking') return [THINK_CLOSE];
    if (mode === 'tool') return [TOOL_CLOSE];
    if (mode === 'tail') return [];
    const m: string[] = [];
    if (o.thinking) m.push(THINK_OPEN);
    if (o.tools === 'hermes') m.push(TOOL_OPEN);
    if (o.tools === 'mistral') m.push(MISTRAL);
    if (o.tools === 'json') m.push(PYTHON_TAG);
    return m;
  };

  const sink = (out: OutputDelta, text: string) => {
    if (!text) return;
    if (mode === 'thinking') out.thinking += text;
    else if (mode === 'tool') toolText(out, text);
    else {
      out.content += text;
      if (/\S/.test(text)) sawContent = true;
    }
  };

  const toolText = (out: OutputDelta, text: string) => {
    toolBody += text;
    if (!fragment || !text) return;
    for (const f of fragment(text)) (out.callFragments ??= []).push({ ...f, index: callCount });
  };

  const calls = (out: OutputDelta, parsed: ParsedToolCall[] | undefined, asText: string) => {
    if (parsed) {
      out.toolCalls.push(...parsed);
      callCount += parsed.length;
      anyCalls = true;
    } else {
      out.content += asText;
      sawContent = true;
    }
  };

  const parseTail = (text: string): ParsedToolCall[] | undefined => {
    const direct = parseToolCallText(text);
    if (direct) return direct;
    // newer Mistral form: [TOOL_CALLS]name[ARGS]{...}
    const m = /^\s*([\w.-]+)\[ARGS\]([\s\S]*)$/.exec(text);
    if (m) {
      try {
        const call = toToolCall({ name: m[1], arguments: JSON.parse(m[2]) });
        return call ? [call] : undefined;
      } catch {
        return undefined;
      }
    }
    return undefined;
  };

  function run(out: OutputDelta, final: boolean) {
    for (;;) {
      if (mode === 'tail') {
        toolBody += buf;
        buf = '';
        if (final) calls(out, parseTail(toolBody), tailPrefix + toolBody);
        return;
      }
      if (trimLead) {
        buf = buf.replace(/^\s+/, '');
        if (!buf) return;
        trimLead = false;
      }
      // Llama-style: an output that opens with a JSON object/array while tools are offered may be a call
      if (mode === 'content' && o.tools === 'json' && !sawContent) {
        const t = buf.trimStart();
        if (!t && !final) return;
        if (t[0] === '{' || t[0] === '[') {
          mode = 'tail';
          buf = t;
          tailPrefix = '';
          toolBody = '';
          continue;
        }
      }
      const ms = markers();
      let at = -1;
      let mk = '';
      for (const m of ms) {
        const i = buf.indexOf(m);
        if (i >= 0 && (at < 0 || i < at)) (at = i), (mk = m);
      }
      if (at >= 0) {
        sink(out, mode === 'tool' ? buf.slice(0, at) : buf.slice(0, at).trimEnd());
        buf = buf.slice(at + mk.length);
        if (mk === THINK_OPEN) (mode = 'thinking'), (trimLead = true);
        else if (mk === THINK_CLOSE) (mode = 'content'), (trimLead = true);
        else if (mk === TOOL_OPEN) {
          mode = 'tool';
          toolBody = '';
          fragment = o.streamCalls ? createCallFragmenter() : undefined;
        } else if (mk === TOOL_CLOSE) {
          mode = 'content';
          calls(out, parseToolCallText(toolBody), TOOL_OPEN + toolBody + TOOL_CLOSE);
          toolBody = '';
          fragment = undefined;
          trimLead = true;
        } else if (mk === MISTRAL || mk === PYTHON_TAG) (mode = 'tail'), (tailPrefix = mk), (toolBody = '');
        continue;
      }
      if (final) {
        if (mode === 'tool') {
          // unclosed block (output cut or the close tag was a stop): a valid call still counts
          calls(out, parseToolCallText(toolBody + buf), TOOL_OPEN + toolBody + buf);
          toolBody = '';
        } else if (mode === 'thinking') sink(out, buf.trimEnd());
        else sink(out, anyCalls ? buf.trimEnd() : buf);
        buf = '';
        return;
      }
      if (mode === 'tool') {
        const keep = partialMarkerLength(buf, ms);
        toolText(out, buf.slice(0, buf.length - keep));
        buf = buf.slice(buf.length - keep);
        return;
      }
      // hold back a possible marker start and trailing whitespace (it may precede a block and be trimmed)
      const keep = partialMarkerLength(buf, ms);
      const safe = buf.slice(0, buf.length - keep);
      const emit = safe.trimEnd();
      sink(out, emit);
      buf = buf.slice(emit.length);
      return;
    }
  }

  return {
    push(text) {
      const out = emptyDelta();
      buf += text;
      run(out, false);
      return out;
    },
    flush() {
      const out = emptyDelta();
      run(out, true);
      return out;
    },
  };
}
