/**
 * `svc run <model> [prompt]`: a chat with streaming, as `ollama run` offers it. With a prompt (or piped
 * standard input) it answers once and exits; otherwise an interactive session with multi-line input
 * (`"""`), `/set system`, `/set parameter`, `/set format`, `/clear`, `/show`, `/bye`, and image paths in
 * the prompt for vision models. A missing model is pulled first, with its progress.
 */
import { existsSync, readFileSync } from 'node:fs';
import { lineReader, onInterrupt, readStdin, stdinIsTTY, stdoutIsTTY, writeErr, writeOut } from '../runtime/process.ts';
import { ServerError, type SvcClient } from './client.ts';
import { type CommandContext, pullModel } from './models.ts';
import { dim, printError } from './output.ts';
import { UsageError } from './args.ts';

interface Message {
  role: string;
  content: string;
  images?: string[];
}
interface ChatChunk {
  message?: { content?: string; thinking?: string };
  done?: boolean;
  eval_count?: number;
  eval_duration?: number;
}

interface Session {
  model: string;
  system?: string;
  format?: string;
  options: Record<string, unknown>;
  messages: Message[];
  hideThinking: boolean;
  think?: boolean;
}

const IMAGE = /\.(png|jpe?g|webp|gif|bmp|tiff?)$/i;

/** Image paths named in a prompt (quoted or bare, `~` expanded) become base64 images. */
export function extractImages(text: string, home = ''): { text: string; images: string[] } {
  const images: string[] = [];
  const rest = text.replace(/(?:'([^']+)'|"([^"]+)"|(\S+))/g, (whole, q1, q2, bare) => {
    const raw = (q1 ?? q2 ?? bare) as string;
    const path = raw.replace(/^~(?=\/)/, home).replace(/\\ /g, ' ');
    if (!IMAGE.test(path) || !existsSync(path)) return whole;
    images.push(btoa(Array.from(readFileSync(path), (b) => String.fromCharCode(b)).join('')));
    return '';
  });
  return { text: rest.replace(/\s{2,}/g, ' ').trim(), images };
}

async function ensureModel(client: SvcClient, model: string, json: boolean): Promise<void> {
  try {
    await client.json('POST', '/api/show', { model });
  } catch (e) {
    if (!(e instanceof ServerError) || e.status !== 404) throw e;
    await pullModel(client, model, json);
  }
}

/** Streams one answer to stdout; returns the assistant's text. Ctrl-C stops this answer only. */
async function answer(client: SvcClient, s: Session, json: boolean): Promise<string> {
  const abort = new AbortController();
  const off = onInterrupt(() => abort.abort());
  const messages = s.system ? [{ role: 'system', content: s.system }, ...s.messages] : s.messages;
  let text = '';
  let thinking = false;
  try {
    for await (
      const ch of client.ndjson<ChatChunk>('/api/chat', {
        model: s.model,
        messages,
        stream: true,
        options: s.options,
        ...(s.format ? { format: s.format } : {}),
        ...(s.think === undefined ? {} : { think: s.think }),
      }, abort.signal)
    ) {
      if (json) {
        writeOut(JSON.stringify(ch) + '\n');
        text += ch.message?.content ?? '';
        continue;
      }
      const th = ch.message?.thinking;
      if (th && !s.hideThinking) {
        if (!thinking) writeOut(dim('Thinking...\n'));
        thinking = true;
        writeOut(dim(th));
      }
      const piece = ch.message?.content ?? '';
      if (piece) {
        if (thinking) writeOut(dim('\n...done thinking.\n\n'));
        thinking = false;
        writeOut(piece);
        text += piece;
      }
    }
  } catch (e) {
    if (!abort.signal.aborted) throw e;
  } finally {
    off();
  }
  if (!json) writeOut(text.endsWith('\n') ? '\n' : '\n\n');
  return text;
}

const HELP = `Available commands:
  /set system <text>          set the system message
  /set parameter <name> <v>   set a parameter (temperature, top_p, top_k, seed, num_predict, num_ctx, stop, …)
  /set format json            answer in JSON (/set noformat to undo)
  /set think | nothink        turn thinking on or off for thinking models
  /show                       show the session's settings
  /clear                      forget the conversation
  /bye                        exit
  """                         begin or end a multi-line message
Image paths in a message are sent as images to vision models.
`;

function parseValue(v: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}

/** Handles a `/command`; returns false when the session should end. */
function command(line: string, s: Session): boolean {
  const [cmd, sub, ...rest] = line.trim().split(/\s+/);
  switch (cmd) {
    case '/bye':
    case '/exit':
      return false;
    case '/clear':
      s.messages = [];
      writeOut('Cleared session context\n');
      return true;
    case '/?':
    case '/help':
      writeOut(HELP);
      return true;
    case '/show':
      writeOut(JSON.stringify({ model: s.model, system: s.system, format: s.format, options: s.options }, null, 2) + '\n');
      return true;
    case '/set':
      if (sub === 'system') {
        s.system = line.trim().replace(/^\/set\s+system\s*/, '').replace(/^"(.*)"$/s, '$1');
        writeOut('Set system message.\n');
      } else if (sub === 'parameter' && rest.length >= 2) {
        const [name, ...value] = rest;
        s.options[name!] = name === 'stop' ? value : parseValue(value.join(' '));
        writeOut(`Set parameter '${name}' to '${value.join(' ')}'\n`);
      } else if (sub === 'format' && rest[0] === 'json') {
        s.format = 'json';
        writeOut('Set format to json.\n');
      } else if (sub === 'think' || sub === 'nothink') {
        s.think = sub === 'think';
        writeOut(`Set '${sub}' mode.\n`);
      } else if (sub === 'noformat') {
        s.format = undefined;
        writeOut('Disabled format.\n');
      } else writeOut(`Unknown /set option; try /?\n`);
      return true;
    default:
      writeOut(`Unknown command '${cmd}'. Type /? for help\n`);
      return true;
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const [model, ...promptWords] = ctx.words;
  if (!model) throw new UsageError('usage: svc run <model> [prompt]');
  const s: Session = {
    model,
    system: ctx.flags.get('system'),
    format: ctx.flags.get('format'),
    options: {},
    messages: [],
    hideThinking: ctx.flags.has('hidethinking'),
    think: ctx.flags.has('think') ? ctx.flags.get('think') !== 'false' : undefined,
  };
  await ensureModel(ctx.client, model, ctx.json);
  let prompt = promptWords.join(' ');
  if (!stdinIsTTY()) {
    const piped = await readStdin();
    prompt = [prompt, piped.trim()].filter(Boolean).join('\n\n');
  }
  if (prompt || !stdinIsTTY()) {
    const { text, images } = extractImages(prompt);
    s.messages.push({ role: 'user', content: text, ...(images.length ? { images } : {}) });
    await answer(ctx.client, s, ctx.json);
    return 0;
  }

  let pending: string[] | null = null;
  const reader = await lineReader(() => {
    reader.clearLine();
    writeOut(pending ? '\n' : '\nUse Ctrl + d or /bye to exit.\n');
    pending = null;
    void 0;
  });
  if (stdoutIsTTY()) writeErr(dim('Send a message (/? for help)\n', true));
  try {
    for (;;) {
      const line = await reader.ask(pending ? '... ' : '>>> ');
      if (line === null) break;
      if (pending) {
        if (line.trimEnd().endsWith('"""')) {
          pending.push(line.trimEnd().slice(0, -3));
          const text = pending.join('\n');
          pending = null;
          await send(text);
        } else pending.push(line);
        continue;
      }
      if (line.trimStart().startsWith('"""')) {
        const after = line.trimStart().slice(3);
        if (after.trimEnd().endsWith('"""') && after.trim().length >= 3) await send(after.trimEnd().slice(0, -3));
        else pending = [after];
        continue;
      }
      if (line.trimStart().startsWith('/')) {
        if (!command(line, s)) break;
        continue;
      }
      if (line.trim()) await send(line);
    }
  } finally {
    reader.close();
  }
  return 0;

  async function send(raw: string) {
    const { text, images } = extractImages(raw);
    s.messages.push({ role: 'user', content: text, ...(images.length ? { images } : {}) });
    try {
      const reply = await answer(ctx.client, s, ctx.json);
      s.messages.push({ role: 'assistant', content: reply });
    } catch (e) {
      s.messages.pop(); // the turn did not happen: leave the conversation as it was
      printError((e as Error).message);
    }
  }
}
