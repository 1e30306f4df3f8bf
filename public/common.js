// Browser code shared by the admin console and the playground: a plain ES module served from public/ (no
// build step; the pages' CSP allows scripts from this origin only).
export const $ = (id) => document.getElementById(id);

/** An element with properties and children (strings or nodes; null and undefined skipped). */
export const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children.filter((c) => c != null));
  return node;
};

/** The CSRF token of the console's area ticket (the readable svc-csrf cookie), echoed in X-Svc-Csrf. */
export const csrfToken = () => document.cookie.split(';').map((s) => s.trim()).find((s) => s.startsWith('svc-csrf='))?.slice(9) ?? '';

/**
 * An Error for a failed answer, whichever dialect shaped the body: native and OpenAI `{error: {code,
 * message}}`, Ollama `{error: "text"}`. Carries `status` and `reason`.
 */
export function answerError(res, body) {
  const e = body?.error;
  const err = new Error(typeof e === 'string' ? (body.message ?? e) : e?.message ?? `${res.status} ${res.statusText}`);
  err.status = res.status;
  err.reason = typeof e === 'string' ? e : e?.code ?? e?.type;
  return err;
}

/** The message of a failed answer, for showing in the page. */
export const errorText = async (res) => answerError(res, await res.json().catch(() => null)).message;

/** Reads the lines of a response body as they arrive. */
async function* lines(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      yield buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
    }
  }
  if (buf) yield buf;
}

/** Reads an NDJSON response (Ollama's streams) object by object. */
export async function* ndjson(res) {
  for await (const line of lines(res)) if (line.trim()) yield JSON.parse(line);
}

/** Reads a server-sent event stream (OpenAI's streams): `{event, data}` per event, data parsed as JSON unless `[DONE]`. */
export async function* sse(res) {
  let event = 'message';
  let data = [];
  for await (const line of lines(res)) {
    if (line === '') {
      if (data.length) {
        const text = data.join('\n');
        yield { event, data: text === '[DONE]' ? text : JSON.parse(text) };
      }
      event = 'message';
      data = [];
    } else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    else if (line.startsWith('event:')) event = line.slice(6).trim();
  }
  if (data.length) yield { event, data: data.join('\n') === '[DONE]' ? '[DONE]' : JSON.parse(data.join('\n')) };
}

/** Shows the server's version in the element with this id. */
export function showVersion(id) {
  fetch('/api/version').then((r) => r.json()).then((v) => { $(id).textContent = `version ${v.version}`; })
    .catch(() => { $(id).textContent = 'version unavailable'; });
}
