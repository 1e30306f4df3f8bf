/**
 * Continuous batching: concurrent generations on one model share session steps and still give exactly
 * what each gives alone (and what torch gives), with per-request sampling, stops and cancellation.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { type GenerateOptions, generateText, type GenerationInput } from '../../../src/services/inference/generate.ts';
import { batchDecoderFor, PREFILL_CHUNK, PREFILL_CHUNK_ALONE, RUN_AHEAD } from '../../../src/services/inference/batch-decoder.ts';
import { createSamplerProcessor, type LogitsProcessorLike, suppressTokens } from '../../../src/services/inference/sampling.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { greedyOnReferencePrompt, REF } from './reference.ts';

let m: LoadedModel;
/** Batch size (rows) of every decode step the decoder ran, recorded by wrapping the session's runHeld. */
const stepBatches: number[] = [];
/**
 * Every session call: rows × new tokens, whether it appended its new positions in place, and whether its
 * logits came back through shared memory (nothing returned over the wire).
 */
const calls: { rows: number; tokens: number; inPlace: boolean; sharedLogits: boolean }[] = [];
/** Rows of each decode step the inference thread ran ahead on its own (greedy, plain data), and steps per run. */
const ahead: number[] = [];
const aheadRuns: number[] = [];
/** Whether the inference thread is asked back at once in every run ahead. */
let interruptRuns = false;
/** Buffers the decoder asked the inference thread to hold, per request. */
const holds: number[][] = [];
before(async () => {
  m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu', dtype: 'fp32' });
  const s = (m.model as unknown as {
    sessions: {
      model: {
        runHeld: (f: Record<string, { dims: number[] }>, ...rest: unknown[]) => Promise<unknown>;
        hold: (lengths: number[]) => Promise<unknown>;
        decodeHeld: (plan: { pads: number[]; steps: number; interrupt?: Int32Array }) => Promise<{ tokens: Int32Array }>;
      };
    };
  })
    .sessions.model;
  const record = (f: Record<string, { dims: number[] }>, appends: unknown, returned: unknown) => {
    if (f.input_ids!.dims[1] === 1) stepBatches.push(f.input_ids!.dims[0]!);
    calls.push({
      rows: f.input_ids!.dims[0]!,
      tokens: f.input_ids!.dims[1]!,
      inPlace: Object.keys(appends ?? {}).length > 0,
      sharedLogits: Array.isArray(returned) && returned.length === 0,
    });
  };
  // the decoder runs the session on buffers held in the inference thread (src/services/inference/ort-thread.ts)
  const runHeld = s.runHeld.bind(s);
  s.runHeld = (f, ...rest) => (record(f, rest[1], rest[2]), runHeld(f, ...rest));
  // greedy steps run back to back in the inference thread (src/services/inference/batch-decoder.ts RUN_AHEAD):
  // each is a decode step of every row, its new positions appended in place, its logits in shared memory
  const decodeHeld = s.decodeHeld.bind(s);
  s.decodeHeld = async (plan) => {
    // as a request arriving or a cancellation would, mid-run: the thread hands back after the step under way
    if (interruptRuns) Atomics.store(plan.interrupt!, 0, 1);
    const decoded = await decodeHeld(plan);
    const chosen = decoded.tokens;
    const rows = plan.pads.length;
    aheadRuns.push(chosen.length / rows);
    for (let k = 0; k < chosen.length / rows; k++) {
      stepBatches.push(rows);
      calls.push({ rows, tokens: 1, inPlace: true, sharedLogits: true });
      ahead.push(rows);
    }
    return decoded;
  };
  const hold = s.hold.bind(s);
  s.hold = (lengths) => (holds.push(lengths), hold(lengths));
});
after(() => m.dispose());

async function collect(input: GenerationInput, o: GenerateOptions) {
  const g = generateText(m, input, o);
  const deltas: string[] = [];
  for await (const d of g) deltas.push(d);
  return { text: deltas.join(''), result: await g.result };
}

const prompts: GenerationInput[] = [
  { messages: [{ role: 'user', content: 'Tell me about Paris.' }], enableThinking: false },
  { prompt: 'a b' },
  {
    messages: [{ role: 'system', content: 'You are terse and you answer in lists of short words only.' }, {
      role: 'user',
      content: 'Name colours.',
    }],
    enableThinking: false,
  },
  { prompt: 'The quick brown fox jumps over the lazy dog and keeps running' },
];

test("the batch path is the one in use, and greedy equals torch's tokens", async () => {
  assert.ok(batchDecoderFor(m), 'the tiny decoder is batchable');
  const ids: number[] = [];
  // the reference prompt ids fed as they are; torch's greedy continuation must come out
  const dec = batchDecoderFor(m)!;
  await dec.run({
    promptIds: REF.generate.prompt_ids,
    maxNew: REF.generate.greedy_ids.length,
    processors: [],
    signal: new AbortController().signal,
    onToken: (t) => (ids.push(t), false),
  });
  assert.deepEqual(ids, REF.generate.greedy_ids);
});

const RUN_LENGTH = 40;

/** RUN_LENGTH tokens after the reference prompt with these processors (stopping early at `stopAt`), and the steps run ahead. */
async function run(processors: LogitsProcessorLike[], stopAt = Infinity) {
  const got: number[] = [];
  ahead.length = 0;
  await batchDecoderFor(m)!.run({
    promptIds: REF.generate.prompt_ids,
    maxNew: RUN_LENGTH,
    processors,
    signal: new AbortController().signal,
    onToken: (t) => (got.push(t), got.length >= stopAt),
  });
  return { got, ahead: ahead.length };
}

test('greedy steps run ahead in the inference thread give the tokens of steps taken one at a time, suppressed tokens never', async () => {
  const n = RUN_LENGTH;
  // a processor that changes nothing but is code, not data: every step goes through this thread
  const lockstep = await run([(_ids: bigint[][], logits: unknown) => logits]);
  assert.equal(lockstep.ahead, 0);
  const runAhead = await run([]);
  assert.ok(runAhead.ahead >= n - 1 - RUN_AHEAD, `${runAhead.ahead} of ${n - 1} steps ran ahead`);
  assert.deepEqual(runAhead.got, lockstep.got);
  assert.deepEqual(runAhead.got, await greedyOnReferencePrompt(m.model as never, m.tf.Tensor, n));
  // the most frequent greedy tokens suppressed: data, so ahead too; the same as the code that suppresses them
  const banned = [...new Set(lockstep.got)].slice(0, 3);
  const mask = (_ids: bigint[][], logits: { data: Float32Array }) => {
    for (const t of banned) logits.data[t] = -Infinity;
    return logits;
  };
  const suppressed = await run([suppressTokens(banned)]);
  assert.ok(suppressed.ahead > 0);
  assert.deepEqual(suppressed.got, (await run([mask as LogitsProcessorLike])).got);
  assert.ok(suppressed.got.every((t) => !banned.includes(t)));
  // asked back at once (a request arriving, a cancellation): one step a run, the same tokens
  interruptRuns = true;
  aheadRuns.length = 0;
  const interrupted = await run([]).finally(() => (interruptRuns = false));
  assert.deepEqual(interrupted.got, lockstep.got);
  assert.ok(aheadRuns.length > 0 && aheadRuns.every((n) => n === 1), `steps per run: ${aheadRuns}`);
  // a stop in the middle of a run ahead: the row ends there, its later tokens dropped, the decoder still exact
  const stopped = await run([], 6);
  assert.deepEqual(stopped.got, lockstep.got.slice(0, 6));
  assert.deepEqual((await run([])).got, lockstep.got);
});

test('sampled steps run ahead in the inference thread draw the tokens, and leave the generator where, drawn one at a time here', async () => {
  const n = RUN_LENGTH;
  const identity = (_ids: bigint[][], logits: unknown) => logits;
  for (const o of [{ temperature: 1.3, seed: 7 }, { temperature: 0.9, topK: 20, topP: 0.9, seed: 12345 }]) {
    const here = createSamplerProcessor(o)!, there = createSamplerProcessor(o)!;
    // a code processor before the sampler: every draw in this thread, step by step
    const lockstep = await run([identity, here]);
    assert.equal(lockstep.ahead, 0);
    const runAhead = await run([there]);
    assert.ok(runAhead.ahead >= n - 1 - RUN_AHEAD, `${runAhead.ahead} of ${n - 1} steps ran ahead`);
    assert.deepEqual(runAhead.got, lockstep.got, JSON.stringify(o));
    // the draws are not greedy's (the sampler is in use), and the generators stand at the same place
    assert.notDeepEqual(runAhead.got, await greedyOnReferencePrompt(m.model as never, m.tf.Tensor, n));
    assert.equal(there.sampler.state, here.sampler.state);
    // tokens never taken, with a sampler after them: still data, so ahead
    const banned = [...new Set(lockstep.got)].slice(0, 3);
    const a = createSamplerProcessor(o)!, b = createSamplerProcessor(o)!;
    const suppressedAhead = await run([suppressTokens(banned), a]);
    assert.ok(suppressedAhead.ahead > 0);
    assert.deepEqual(suppressedAhead.got, (await run([suppressTokens(banned), identity, b])).got);
    assert.ok(suppressedAhead.got.every((t) => !banned.includes(t)));
    // a stop in the middle of a run ahead: the row ends there, with the tokens drawn step by step
    const stopped = await run([createSamplerProcessor(o)!], 6);
    assert.deepEqual(stopped.got, lockstep.got.slice(0, 6));
  }
});

test("a stream decoding past its cache's capacity, appended in place and laid out again, gives transformers.js' tokens", async () => {
  const n = 150; // several times the room a cache is laid out with
  const ids = REF.generate.prompt_ids;
  const got: number[] = [];
  calls.length = 0;
  holds.length = 0;
  await batchDecoderFor(m)!.run({
    promptIds: ids,
    maxNew: n,
    processors: [],
    signal: new AbortController().signal,
    onToken: (t) => (got.push(t), false),
  });
  const steps = calls.filter((c) => c.tokens === 1);
  assert.equal(steps.length, n - 1);
  assert.ok(steps.every((c) => c.inPlace), 'decode steps append their new positions to the cache in place');
  assert.ok(steps.every((c) => c.sharedLogits), 'decode steps leave their logits in memory shared with the inference thread');
  assert.ok(holds.length >= 3, `the cache was laid out ${holds.length} times: ${JSON.stringify(holds)}`);
  // transformers.js' own generate on the same session: the graph's concatenated present, no capacity
  assert.deepEqual(got, await greedyOnReferencePrompt(m.model as never, m.tf.Tensor, n));
});

test('4 concurrent greedy streams give exactly the texts they give alone, decoded in shared steps', async () => {
  const o: GenerateOptions = { temperature: 0, maxTokens: 24 };
  const alone: Awaited<ReturnType<typeof collect>>[] = [];
  for (const p of prompts) alone.push(await collect(p, { ...o, batching: false }));
  const aloneBatched: Awaited<ReturnType<typeof collect>>[] = [];
  for (const p of prompts) aloneBatched.push(await collect(p, o));
  stepBatches.length = 0;
  const together = await Promise.all(prompts.map((p) => collect(p, o)));
  prompts.forEach((_, i) => {
    assert.equal(aloneBatched[i]!.text, alone[i]!.text, `prompt ${i}: batch path alone vs transformers.js generate`);
    assert.equal(together[i]!.text, alone[i]!.text, `prompt ${i}: concurrent vs alone`);
    assert.equal(together[i]!.result.completionTokens, alone[i]!.result.completionTokens);
    assert.equal(together[i]!.result.finishReason, alone[i]!.result.finishReason);
  });
  assert.ok(Math.max(...stepBatches) >= 3, `decode steps ran with batch sizes ${[...new Set(stepBatches)]}`);
  assert.ok(stepBatches.length < prompts.length * 23, `${stepBatches.length} steps for ${prompts.length} × 24 tokens: not shared`);
});

test('per-request sampling, stops and penalties hold inside a batch', async () => {
  const reqs: [GenerationInput, GenerateOptions][] = [
    [prompts[0]!, { temperature: 0.9, seed: 7, maxTokens: 20 }],
    [prompts[1]!, { temperature: 0, maxTokens: 20, repetitionPenalty: 1.5 }],
    [prompts[2]!, { temperature: 0.7, topK: 5, seed: 3, maxTokens: 20 }],
  ];
  const alone: string[] = [];
  for (const [p, o] of reqs) alone.push((await collect(p, { ...o, batching: false })).text);
  const together = await Promise.all(reqs.map(([p, o]) => collect(p, o)));
  reqs.forEach((_, i) => assert.equal(together[i]!.text, alone[i], `request ${i}`));
  // a stop string taken from the greedy text ends that row only
  const full = alone[1]!;
  const stop = full.slice(6, 9);
  assert.ok(stop.length === 3);
  const [a, b] = await Promise.all([
    collect(reqs[1]![0], { ...reqs[1]![1], stop: [stop] }),
    collect(prompts[3]!, { temperature: 0, maxTokens: 20 }),
  ]);
  assert.equal(a.text, full.slice(0, full.indexOf(stop)));
  assert.equal(a.result.finishReason, 'stop');
  assert.equal(b.result.completionTokens, 20);
});

test('cancelling one stream mid-batch leaves the others exact', async () => {
  const o: GenerateOptions = { temperature: 0, maxTokens: 30 };
  const alone: string[] = [];
  for (const p of prompts) alone.push((await collect(p, { ...o, batching: false })).text);
  const ac = new AbortController();
  const gens = prompts.map((p, i) => generateText(m, p, { ...o, ...(i === 1 ? { signal: ac.signal } : {}) }));
  const texts = await Promise.all(gens.map(async (g, i) => {
    let t = '';
    let n = 0;
    try {
      for await (const d of g) {
        t += d;
        if (i === 1 && ++n === 5) ac.abort(new DOMException('client went away', 'AbortError'));
      }
    } catch (e) {
      return { aborted: (e as Error).name, t };
    }
    return { t };
  }));
  await assert.rejects(gens[1]!.result, { name: 'AbortError' });
  assert.equal(texts[1]!.aborted, 'AbortError');
  for (const i of [0, 2, 3]) assert.equal(texts[i]!.t, alone[i], `stream ${i}`);
  // the decoder drains: nothing left decoding once every stream is done
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(batchDecoderFor(m)!.active, 0);
});

test("a prompt longer than a prefill chunk, alone, goes in chunks and gives transformers.js' text", async () => {
  const o: GenerateOptions = { temperature: 0, maxTokens: 24 };
  const long: GenerationInput = { prompt: Array.from({ length: 70 }, (_, i) => `word${i % 11} and more`).join(' ') };
  const tokens = m.tokenizer(long.prompt).input_ids.dims[1]!;
  assert.ok(tokens > PREFILL_CHUNK_ALONE + PREFILL_CHUNK, `the prompt has ${tokens} tokens`);
  // transformers.js' generate prefills the whole prompt in one call
  const want = (await collect(long, { ...o, batching: false })).text;
  assert.ok(want.length > 0);
  calls.length = 0;
  const got = await collect(long, o);
  assert.equal(got.text, want);
  const chunks = calls.filter((c) => c.tokens > 1).map((c) => c.tokens);
  assert.deepEqual(chunks, [PREFILL_CHUNK_ALONE, tokens - PREFILL_CHUNK_ALONE]);
});

test('a long prompt joining running streams is prefilled in chunks between their steps, and every text equals its text alone', async () => {
  const o: GenerateOptions = { temperature: 0, maxTokens: 40 };
  const long: GenerationInput = { prompt: Array.from({ length: 30 }, (_, i) => `word${i % 7} and more`).join(' ') };
  const runners = [prompts[0]!, prompts[3]!];
  const alone: string[] = [];
  for (const p of [...runners, long]) alone.push((await collect(p, { ...o, batching: false })).text);
  const longTokens = m.tokenizer(long.prompt).input_ids.dims[1]!;
  assert.ok(longTokens > 2 * PREFILL_CHUNK, `the long prompt has ${longTokens} tokens`);
  calls.length = 0;
  const running = runners.map((p) => generateText(m, p, o));
  const texts = running.map(async (g) => {
    let t = '';
    for await (const d of g) t += d;
    return t;
  });
  // join once both run: wait for the first decode step of the two
  while (!calls.some((c) => c.rows === 2 && c.tokens === 1)) await new Promise((r) => setTimeout(r, 1));
  const joined = await collect(long, o);
  assert.deepEqual([...(await Promise.all(texts)), joined.text], alone);
  const chunks = calls.filter((c) => c.rows === 1 && c.tokens > 1);
  assert.ok(chunks.length >= 3 && chunks.every((c) => c.tokens <= PREFILL_CHUNK), `prefill calls: ${JSON.stringify(chunks)}`);
  // the running rows decoded between the chunks
  const first = calls.indexOf(chunks[0]!), last = calls.indexOf(chunks.at(-1)!);
  assert.ok(
    calls.slice(first, last).filter((c) => c.tokens === 1).length >= chunks.length - 1,
    JSON.stringify(calls.slice(first, last + 1)),
  );
});
