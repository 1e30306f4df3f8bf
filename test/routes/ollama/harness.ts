/**
 * Dialect B inference tests' harness: a listening server whose hub is the local stand-in serving the tiny
 * fixture models, the official `ollama` client on it, and a way to steer the random model's output: a
 * logits processor that forces a given text (so tool calls and thinking come out for real, through the
 * engine, the parser and the HTTP shapes).
 */
import assert from 'node:assert/strict';
import { Ollama } from 'ollama';
import type { Config } from '../../../src/config.ts';
import type { ChatRequest } from '../../../src/services/chat/index.ts';
import { initBackend } from '../../../src/services/inference/backend.ts';
import type { LogitsProcessorLike } from '../../../src/services/inference/sampling.ts';
import { FIXTURE_CATALOG, FIXTURE_MODELS_DIR, type HubStandIn, LONG_LLAMA, startFixtureHub } from '../../support/hub-stand-in.ts';
import { listening } from '../../support/server.ts';

export type Server = Awaited<ReturnType<typeof listening>>;

export interface Harness {
  hub: HubStandIn;
  srv: Server;
  ollama: Ollama;
  /** Processors added to every chat request while set (undefined = the model's own output). */
  steer(make: (() => LogitsProcessorLike[]) | undefined): void;
  /** `fn` run while the model is made to say exactly `text` (then its turn ends); unsteered again after. */
  steered<T>(text: string, fn: () => Promise<T>): Promise<T>;
  post(path: string, body: unknown, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function startHarness(overrides: Partial<Config> = {}): Promise<Harness> {
  const hub = await startFixtureHub();
  const srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu', ...overrides });
  for (const e of [...FIXTURE_CATALOG, LONG_LLAMA]) srv.models.catalog.register(e);
  let make: (() => LogitsProcessorLike[]) | undefined;
  const chat = srv.chat.chat.bind(srv.chat);
  srv.chat.chat = (req: ChatRequest) => chat(make ? { ...req, logitsProcessors: [...(req.logitsProcessors ?? []), ...make()] } : req);
  return {
    hub,
    srv,
    ollama: new Ollama({ host: srv.url }),
    steer: (m) => (make = m),
    steered: async (text, fn) => {
      const ids = await tinyLlamaIds(text);
      make = () => [forceTokens(ids)];
      try {
        return await fn();
      } finally {
        make = undefined;
      }
    },
    post: (path, body, init = {}) =>
      fetch(`${srv.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...init }),
    close: async () => {
      await srv.stop();
      await hub.close();
    },
  };
}

const TINY_LLAMA_DIR = `${FIXTURE_MODELS_DIR}/tiny-llama`;
/** tiny-llama's end of turn. */
export const IM_END = 478;

/** Token ids of `text` in tiny-llama's tokenizer. */
export async function tinyLlamaIds(text: string): Promise<number[]> {
  const rt = await initBackend('cpu');
  const tok = await rt.tf.AutoTokenizer.from_pretrained(TINY_LLAMA_DIR);
  return tok.encode(text, { add_special_tokens: false } as never);
}

/** A processor that makes the model say exactly `ids`, then end its turn. One per generation. */
export function forceTokens(ids: number[], eos = IM_END): LogitsProcessorLike {
  let step = 0;
  return (_ids: bigint[][], logits: { data: Float32Array }) => {
    const want = step < ids.length ? ids[step] : eos;
    step++;
    logits.data.fill(-Infinity);
    logits.data[want] = 0;
    return logits;
  };
}

/** A processor that lets `steps` decode steps pass, then throws: a failure after the stream began. */
export function failAfter(steps: number): LogitsProcessorLike {
  let calls = 0;
  return (_ids: bigint[][], logits: { data: Float32Array }) => {
    if (++calls > steps) throw new Error(`boom after ${steps} steps`);
    return logits;
  };
}

/** Parses an NDJSON body. */
export async function ndjson(res: Response): Promise<Record<string, any>[]> {
  assert.match(res.headers.get('content-type') ?? '', /application\/x-ndjson/);
  return (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Asserts Ollama's final-object fields (durations in ns). */
export function assertFinal(r: Record<string, any>, maxEval?: number) {
  assert.equal(r.done, true);
  assert.ok(['stop', 'length'].includes(r.done_reason), `done_reason ${r.done_reason}`);
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_count', 'prompt_eval_duration', 'eval_count', 'eval_duration']) {
    assert.equal(typeof r[k], 'number', `${k} is a number`);
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k} = ${r[k]}`);
  }
  assert.ok(r.prompt_eval_count > 0 && r.eval_count > 0);
  assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration, 'total covers prompt eval + eval');
  assert.ok(r.total_duration > 1000, 'nanoseconds, not milliseconds');
  if (maxEval !== undefined) assert.ok(r.eval_count <= maxEval, `eval_count ${r.eval_count} <= ${maxEval}`);
}
