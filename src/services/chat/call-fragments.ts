/**
 * A forced tool call streamed as OpenAI streams one: a first delta with the call's id and name (as soon as
 * the name is complete), then the text of `arguments` in fragments as the model writes it. The call text is
 * constrained decoding's output (`{"name": "...", "arguments": {...}}`, keys in that order, compact JSON
 * with at most one space after ':' and ','), so the arguments are an exact substring of it: no reparsing.
 */
export interface CallFragment {
  /** Set on the first fragment only. */
  name?: string;
  arguments: string;
}

export function createCallFragmenter() {
  let buf = '';
  let name: string | undefined;
  let argsAt = -1;
  let scanned = 0;
  let depth = 0;
  let inStr = false;
  let esc = false;
  let done = false;

  /** New text of the call → the fragments it completes. */
  return function push(text: string): CallFragment[] {
    buf += text;
    const out: CallFragment[] = [];
    if (name === undefined) {
      const m = /"name": ?("(?:[^"\\]|\\.)*")/.exec(buf);
      if (!m) return out;
      name = JSON.parse(m[1]) as string;
      out.push({ name, arguments: '' });
    }
    if (argsAt < 0) {
      const m = /"(?:arguments|parameters)": ?/.exec(buf);
      if (!m) return out;
      argsAt = scanned = m.index + m[0].length;
    }
    if (done) return out;
    const start = scanned;
    for (; scanned < buf.length; scanned++) {
      const c = buf[scanned];
      if (inStr) {
        if (esc) esc = false;
        else if (c === '\\') esc = true;
        else if (c === '"') inStr = false;
        continue;
      }
      if (c === '"') inStr = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']' || c === ',') {
        if (depth === 0) {
          done = true; // the wrapper's own ',' or '}': the arguments value ended before it
          break;
        }
        if (c !== ',') depth--;
        if (depth === 0) {
          scanned++;
          done = true;
          break;
        }
      }
    }
    if (scanned > start) out.push({ arguments: buf.slice(start, scanned) });
    return out;
  };
}
