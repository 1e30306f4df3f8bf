/**
 * OpenAI dialect benchmark, in one process: time to first token and decode tokens/s of a streamed chat
 * through HTTP with the official `openai` client, against the inference engine called directly on the same
 * model (same engine instance, same prompt, greedy, EOS masked so every run decodes the same number of
 * tokens); and the per-token cost of constrained decoding (json_schema) against unconstrained decoding.
 *
 * Run: node --import tsx scripts/bench/openai.ts     (writes the "OpenAI dialect" section of BENCHMARKS.md)
 *   BENCH_TOKENS=64 BENCH_RUNS=7. Uses .models-cache/qwen2.5-0.5b when present (see generate.ts), else the
 *   tiny-llama fixture, and says which.
 */
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ChatRequest } from '../../src/services/chat/index.ts';
import { prepareConstraint } from '../../src/services/inference/structured/index.ts';
import type { LogitsProcessorLike } from '../../src/services/inference/sampling.ts';
import { FIXTURE_CATALOG, FIXTURE_MODELS_DIR, HubStandIn } from '../../test/support/hub-stand-in.ts';
import { listening } from '../../test/support/server.ts';

const TOKENS = Number(process.env.BENCH_TOKENS ?? 64);
const LOAD = loadavg().map((x) => x.toFixed(2)).join(' ');
console.log(`load average at the start: ${LOAD}`);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const BIG = resolve('.models-cache/qwen2.5-0.5b');
const useBig = existsSync(join(BIG, 'config.json'));
const modelDir = useBig ? BIG : join(FIXTURE_MODELS_DIR, 'tiny-llama');
const MODEL = useBig ? 'bench-qwen:q8' : 'tiny-llama:test';
const messages = [{ role: 'user', content: 'Write a short story about a lighthouse keeper.' }];

const hub = await HubStandIn.start({ 'svc-bench/model': modelDir });
const srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu', threads: 1 } as never);
srv.models.catalog.register(
  useBig
    ? { ...FIXTURE_CATALOG[0], name: MODEL, aliases: [], repo: 'svc-bench/model', dtype: 'q8' }
    : { ...FIXTURE_CATALOG[0], repo: 'svc-bench/model' },
);

// EOS masked (both paths): a random model would otherwise stop at a random point.
let eosIds: number[] = [];
const noEos: LogitsProcessorLike = (_ids: bigint[][], logits: { data: Float32Array }) => {
  for (const e of eosIds) logits.data[e] = -Infinity;
  return logits;
};
const chat = srv.chat.chat.bind(srv.chat);
srv.chat.chat = (req: ChatRequest) => chat({ ...req, logitsProcessors: [noEos] });

const m = await srv.chat.resolve(MODEL, 'generation');
await srv.engine.preload(m.engineSpec);
{
  const gen = await srv.engine.generate(m.engineSpec, { messages }, { maxTokens: 1, temperature: 0 });
  for await (const _ of gen);
  await gen.result;
}
// the model's EOS ids, from its generation config (as generate.ts reads them)
const cfg = JSON.parse(await (await import('node:fs/promises')).readFile(join(modelDir, 'generation_config.json'), 'utf8'));
eosIds = [cfg.eos_token_id ?? []].flat().map(Number);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => performance.now();

async function direct(extra: Parameters<typeof srv.engine.generate>[2] = {}) {
  const t0 = now();
  let tFirst = 0;
  // the model's defaults (generation_config) layered under the request, as the chat service does
  const gen = await srv.engine.generate(m.engineSpec, { messages }, {
    ...m.defaults,
    maxTokens: TOKENS,
    temperature: 0,
    logitsProcessors: [noEos],
    ...extra,
  });
  for await (const _ of gen) if (!tFirst) tFirst = now();
  const r = await gen.result;
  const tEnd = now();
  return {
    ttft: tFirst - t0,
    tps: ((r.completionTokens - 1) * 1000) / (tEnd - tFirst),
    tokens: r.completionTokens,
    evalMsPerTok: r.timings.evalNs / 1e6 / Math.max(1, r.completionTokens - 1),
  };
}

const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
async function http() {
  const t0 = now();
  let tFirst = 0;
  let tokens = 0;
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: messages as never,
    max_tokens: TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const c of stream) {
    if (!tFirst && c.choices[0]?.delta?.content) tFirst = now();
    if (c.usage) tokens = c.usage.completion_tokens;
  }
  const tEnd = now();
  return { ttft: tFirst - t0, tps: ((tokens - 1) * 1000) / (tEnd - tFirst), tokens };
}

// The same client in its own process, as a real caller is (its request building, SSE parsing and garbage
// then stay out of the server's event loop).
const child = spawn(process.execPath, [
  fileURLToPath(new URL('./openai-client.mjs', import.meta.url)),
  `${srv.url}/v1`,
  MODEL,
  String(TOKENS),
], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
async function remote(): Promise<{ ttft: number; tps: number; tokens: number }> {
  child.stdin!.write('go\n');
  return JSON.parse(String((await lines.next()).value));
}

// warm every path
await direct();
await http();
await remote();
const d: Awaited<ReturnType<typeof direct>>[] = [];
const h: Awaited<ReturnType<typeof http>>[] = [];
const x: Awaited<ReturnType<typeof remote>>[] = [];
for (let i = 0; i < RUNS; i++) {
  d.push(await direct());
  h.push(await http());
  x.push(await remote());
}
child.stdin!.end();

// constrained (json_schema) vs unconstrained per-token decode time, engine direct
const schema = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    status: { enum: ['open', 'closed'] },
    owner: { type: 'object', properties: { name: { type: 'string' }, id: { type: 'integer' } }, required: ['name', 'id'] },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['title', 'status', 'owner', 'tags'],
};
// the features client libraries send: bounded integers and numbers, formats and a pattern (DFA-compiled),
// a record, a discriminated union and a recursive tree ($ref "#/$defs/node")
const richSchema = {
  $defs: {
    node: {
      type: 'object',
      properties: {
        label: { type: 'string', pattern: '^[a-z]{2,8}$' },
        kids: { type: 'array', items: { $ref: '#/$defs/node' }, maxItems: 2 },
      },
      required: ['label', 'kids'],
      additionalProperties: false,
    },
  },
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    qty: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
    price: { type: 'number', minimum: 0, maximum: 1000 },
    email: { type: 'string', format: 'email' },
    when: { type: 'string', format: 'date-time' },
    sku: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
    notes: { type: 'object', propertyNames: { type: 'string' }, additionalProperties: { type: 'integer' } },
    ship: {
      oneOf: [{ type: 'object', properties: { kind: { const: 'post' }, zip: { type: 'string' } }, required: ['kind', 'zip'] }, {
        type: 'object',
        properties: { kind: { const: 'pickup' }, store: { type: 'integer' } },
        required: ['kind', 'store'],
      }],
    },
    tree: { $ref: '#/$defs/node' },
  },
  required: ['id', 'qty', 'price', 'email', 'when', 'sku', 'notes', 'ship', 'tree'],
  additionalProperties: false,
};
// The features split by kind: formats and a pattern (DFA-compiled strings), and recursion with a record
// and a discriminated union.
const formatSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    email: { type: 'string', format: 'email' },
    when: { type: 'string', format: 'date-time' },
    sku: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' },
    qty: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
    price: { type: 'number', minimum: 0, maximum: 1000 },
  },
  required: ['id', 'email', 'when', 'sku', 'qty', 'price'],
  additionalProperties: false,
};
const recursiveSchema = {
  $defs: richSchema.$defs,
  type: 'object',
  properties: { notes: richSchema.properties.notes, ship: richSchema.properties.ship, tree: richSchema.properties.tree },
  required: ['notes', 'ship', 'tree'],
  additionalProperties: false,
};
type ConsRun = { msPerTok: number; procMsPerTok: number; walkMs: number; fast: number; steps: number; tokens: number };
/**
 * One constrained generation (sampled at temperature 1 under the model's top_k/top_p, seeded). `cold`: the
 * schema gets a `$comment` never seen before, so its grammar is compiled and every allowed set computed anew
 * (a client's first request with a schema); otherwise the schema is the one every run uses (its allowed sets
 * are cached from earlier runs, as a client repeating its schema finds them).
 */
const constrainedRun = async (sch: object, seed: number, maxTokens: number, cold: boolean): Promise<ConsRun> => {
  const c = prepareConstraint({ type: 'json_schema', schema: cold ? { ...sch, $comment: `cold ${seed} ${Math.random()}` } : sch });
  const r = await direct({ processorsFor: (ctx) => c.processorsFor(ctx), temperature: 1, seed, logitsProcessors: [], maxTokens });
  const st = c.processor!.stats;
  return {
    msPerTok: r.evalMsPerTok,
    procMsPerTok: st.totalNs / 1e6 / st.steps,
    walkMs: st.walkNs / 1e6,
    fast: st.fast,
    steps: st.steps,
    tokens: r.tokens,
  };
};
const KINDS = [
  { name: 'basic: nested object, enum, array', schema, max: 160 },
  { name: 'formats and pattern: uuid, email, date-time, pattern, bounded numbers', schema: formatSchema, max: 200 },
  { name: 'recursion: $ref tree, record, discriminated oneOf', schema: recursiveSchema, max: 200 },
  { name: 'all client features together', schema: richSchema, max: 400 },
];
type KindRuns = { free: number[]; cold: ConsRun[]; warm: ConsRun[] };
const kindRuns: KindRuns[] = KINDS.map(() => ({ free: [], cold: [], warm: [] }));
// Interleaved per seed and kind: constrained (cold schema), unconstrained on exactly as many tokens (EOS
// masked), constrained (repeated schema; same seed, so the same output). Equal work: same model, engine
// instance, thread count, sampling parameters, seed and token count on every side.
for (let i = 0; i < RUNS; i++) {
  for (const [k, kind] of KINDS.entries()) {
    const cold = await constrainedRun(kind.schema, i + 1, kind.max, true);
    kindRuns[k].cold.push(cold);
    kindRuns[k].free.push((await direct({ temperature: 1, seed: i + 1, maxTokens: cold.tokens })).evalMsPerTok);
    kindRuns[k].warm.push(await constrainedRun(kind.schema, i + 1, kind.max, false));
  }
}

const f = (x: number, n = 2) => x.toFixed(n);
const dT = median(d.map((x) => x.ttft));
const hT = median(h.map((x) => x.ttft));
const dS = median(d.map((x) => x.tps));
const hS = median(h.map((x) => x.tps));
const xT = median(x.map((r) => r.ttft));
const xS = median(x.map((r) => r.tps));
const ratioRows = KINDS.map((kind, k) => {
  const r = kindRuns[k];
  const u = median(r.free);
  const row = (label: string, xs: ConsRun[]) =>
    xs.length
      ? `| ${kind.name} | ${label} | ${f(median(xs.map((x) => x.msPerTok)), 3)} | ${f(median(xs.map((x) => x.msPerTok)) / u)}× | ${
        f(median(xs.map((x) => x.procMsPerTok)), 3)
      } | ${f(median(xs.map((x) => x.walkMs)), 0)} | ${median(xs.map((x) => x.fast))}/${median(xs.map((x) => x.steps))} | ${
        median(xs.map((x) => x.tokens))
      } |`
      : '';
  return [
    `| ${kind.name} | unconstrained | ${f(u, 3)} | 1.00× | – | – | – | ${median(r.cold.map((x) => x.tokens))} |`,
    row('constrained, first request with the schema', r.cold),
    row('**constrained, schema repeated**', r.warm),
  ].join('\n');
}).join('\n');
const body = `
Model: **${
  useBig
    ? 'qwen2.5-0.5b-shaped random model (q8), .models-cache/qwen2.5-0.5b'
    : 'tiny-llama fixture (2 layers, hidden 32, vocab 485; no bigger model in .models-cache/)'
}**, native CPU, 1 intra-op thread,
${cpus().length} cores (${
  cpus()[0]?.model ?? 'unknown CPU'
}; load average ${LOAD} at the start), ${TOKENS} greedy tokens with EOS masked, median of ${RUNS} alternating runs after a warm-up. Same process, same engine instance, same parameters (the model's generation_config under the request's).

| path | time to first token (ms) | decode tokens/s | ratio vs direct |
|---|---:|---:|---:|
| engine.generate, direct | ${f(dT)} | ${f(dS, 0)} | 1.00 |
| HTTP, openai client in the server's process, SSE stream | ${f(hT)} | ${f(hS, 0)} | TTFT ${f(hT / dT)}×, tokens/s ${f(hS / dS)}× |
| HTTP, openai client in its own process (as a real caller), SSE stream | ${f(xT)} | ${f(xS, 0)} | TTFT ${f(xT / dT)}×, tokens/s ${
  f(xS / dS)
}× |

Constrained decoding (json_schema), engine direct, sampled at temperature 1 under the model's own top_k 20 / top_p 0.8
and repetition penalty (its generation_config), ${RUNS} seeds; per seed and schema kind the runs are interleaved: constrained
with a schema never seen before (its grammar compiled and every allowed set computed during the run: a client's first
request), unconstrained on exactly as many tokens (EOS masked), constrained with the schema repeated (same seed, so
the same output; its allowed sets cached by the earlier runs, as for a client that sends the same schema again). Same
engine instance, thread, sampling parameters and token count on every side.

| schema kind | decoding | ms per token (median) | vs unconstrained | of which the processor (ms/token) | mask computation (ms per run) | steps without a mask | tokens |
|---|---|---:|---:|---:|---:|---:|---:|
${ratioRows}

The goal (constrained per-token cost ≤ 1.10× unconstrained) is judged per row. The processor first checks the token
the model would choose (greedy: the best tokens in order; top_k: the first k allowed in score order; temperature alone:
rejection sampling) and builds the full mask only when that fails; on this random model with its synthetic vocabulary
(long tokens full of control bytes and broken UTF-8, which a JSON string cannot hold) the model's top tokens are almost
never allowed, so "steps without a mask" stays near 0 here, and the mask is what costs: computed once per distinct
automaton state (inside a plain string from a per-vocabulary table of what each token does there, elsewhere by a
walk of the vocabulary trie), then cached per grammar across requests. The model step grows with the weights, the
mask with the vocabulary. The HTTP path's extra time to first token is no longer the
model's resolution (remembered per model until its manifest or record changes) nor the key check (a client's placeholder
token is neither hashed nor looked up); what remains is the HTTP stack (the openai client, a fresh connection, node:http,
Hono, the body read) and garbage collection of the previous generation's tensors, paid in the request's
event-loop turns where the direct call defers it past its first ONNX run; it varies with the machine's load.
With the client in the server's own process, the client's request building, SSE parsing and garbage also run on
the server's event loop; the row with the client in its own process is what a real caller sees, and the one the
goal (HTTP within 5% of the engine) is judged on.
`;
console.log(body);
const { writeSection } = (await import(new URL('./write-benchmarks.mjs', import.meta.url).href)) as {
  writeSection: (t: string, b: string) => void;
};
writeSection('OpenAI dialect (HTTP vs engine, constrained decoding)', body);
await srv.stop();
await hub.close();
