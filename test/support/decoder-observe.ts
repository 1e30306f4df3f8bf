/**
 * What a caller of a loaded tiny-llama sees (test/services/inference/lm-head.test.ts): the logits of the
 * last position of two rows through transformers.js' forward, and 4 greedy tokens of each row through the
 * batch decoder, the two rows together (one forward, one batch); or `alone`, each row by itself a position at a
 * time through transformers.js' forward on the cache the one before left (every run of the graph quantizes one
 * position's activations, as svc's 8-bit kernels do), the tokens greedy. Run as a script (`node --import tsx decoder-observe.ts q8 [threads] [alone]`) it prints them as JSON,
 * so a process with other settings (SVC_NATIVE_KERNELS=0) can be the judge of this one.
 */
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { batchDecoderFor } from '../../src/services/inference/batch-decoder.ts';
import { loadModel } from '../../src/services/inference/load.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { REF } from '../services/inference/reference.ts';

const config = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8'));
/** The reference prompt, and a second row of the same length made from it. */
export const ROWS = [REF.generate.prompt_ids, REF.generate.prompt_ids.map((x) => (x + 5) % config.vocab_size)];

export interface Observed {
  lmHeadOwnKernel: number;
  mlpsOwnKernel: number;
  outputNames: string[];
  last: number[];
  tokens: number[][];
}

export async function observe(dtype: string, threads = 1, steps = 4, alone = false): Promise<Observed> {
  const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu', dtype: dtype as never, threads });
  try {
    const s =
      (m.model as unknown as { sessions: { model: { edits: { lmHeadOwnKernel: number; mlpsOwnKernel: number }; outputNames: string[] } } })
        .sessions.model;
    const L = ROWS[0]!.length;
    type Out = Record<string, { dims: number[]; data: Float32Array }>;
    const forward = m.model as unknown as (f: unknown) => Promise<Out>;
    /** Each row's last logits, from one forward of the rows given. */
    const lastOf = async (rows: number[][]) => {
      const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [rows.length, L]);
      const out = await forward({ input_ids: t(rows.flat()), attention_mask: t(Array(rows.length * L).fill(1)) });
      const [, per, v] = out.logits.dims as [number, number, number];
      return rows.flatMap((_, r) => [...out.logits.data.subarray(((r + 1) * per - 1) * v, (r + 1) * per * v)]);
    };
    const tokens: number[][] = [[], []];
    if (alone) {
      const last: number[] = [];
      for (const [r, row] of ROWS.entries()) {
        let past: Record<string, unknown> | undefined, logits: Float32Array<ArrayBufferLike> = new Float32Array(0);
        const step = async (tok: number, at: number) => {
          const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
          const out = await forward({ input_ids: t([tok]), attention_mask: t(Array(at + 1).fill(1)), past_key_values: past });
          past = Object.fromEntries(
            Object.entries(out).filter(([n]) => n.startsWith('present')).map(([n, v]) => [n.replace('present', 'past_key_values'), v]),
          );
          logits = out.logits!.data;
        };
        for (const [j, tok] of row.entries()) await step(tok, j);
        last.push(...logits);
        for (let i = 0; i < steps; i++) {
          const tok = logits.reduce((b, v, j) => (v > logits[b]! ? j : b), 0);
          tokens[r]!.push(tok);
          if (i < steps - 1) await step(tok, row.length + i);
        }
      }
      return { lmHeadOwnKernel: s.edits.lmHeadOwnKernel, mlpsOwnKernel: s.edits.mlpsOwnKernel, outputNames: s.outputNames, last, tokens };
    }
    const last = await lastOf(ROWS);
    const decode = (r: number) =>
      batchDecoderFor(m)!.run({
        promptIds: ROWS[r]!,
        maxNew: steps,
        processors: [],
        onToken: (tok) => (tokens[r]!.push(tok), false),
        signal: new AbortController().signal,
      });
    await Promise.all([0, 1].map(decode));
    return { lmHeadOwnKernel: s.edits.lmHeadOwnKernel, mlpsOwnKernel: s.edits.mlpsOwnKernel, outputNames: s.outputNames, last, tokens };
  } finally {
    await m.dispose();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(JSON.stringify(await observe(process.argv[2]!, Number(process.argv[3] ?? 1), 4, process.argv[4] === 'alone')));
  process.exit(0);
}
