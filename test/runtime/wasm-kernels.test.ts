/**
 * svc's WASM kernels as modules (src/runtime/wasm-kernels.ts): the committed native/kernels/svc_kernels.wasm and
 * svc_kernels_relaxed.wasm are what their sources compile to, they need nothing from their host but a shared
 * memory, the engine's best is taken, its workers take part in calls on more threads, and they can be turned off. What they compute is judged against ONNX Runtime with the addon's
 * tests (kernels.test.ts, attention.test.ts) and in the split session (test/services/inference/weight-split.test.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { wasmKernels, wasmKernelsOf, wasmKernelsUnavailable } from '../../src/runtime/wasm-kernels.ts';
import { buildWasmKernels, MODULES } from '../../scripts/build-wasm-kernels.mjs';

const file = (name: string) => readFileSync(new URL(`../../native/kernels/${name}`, import.meta.url));

/** What a module imports: its memory, nothing else. */
const ONLY_MEMORY = [{ module: 'env', name: 'memory', kind: 'memory' }];

test('the committed modules are what their sources in native/kernels compile to', async () => {
  const built = await buildWasmKernels();
  assert.deepEqual(Object.keys(built), Object.keys(MODULES));
  for (const [name, bytes] of Object.entries(built)) {
    assert.ok(Buffer.compare(Buffer.from(bytes), file(name)) === 0, `${name}: npm run build:wasm-kernels, then commit it`);
  }
});

test("the 128-bit build imports only its memory; the engine's best is taken", () => {
  assert.deepEqual(WebAssembly.Module.imports(new WebAssembly.Module(file('svc_kernels.wasm'))), ONLY_MEMORY);
  assert.equal(wasmKernelsUnavailable(), undefined);
  // after the load: on Node 20 svc sets V8's flag for relaxed SIMD
  const relaxed = WebAssembly.validate(file('svc_kernels_relaxed.wasm'));
  assert.equal(wasmKernels()?.path, relaxed ? 'wasm-relaxed-simd' : 'wasm-simd128');
});

/**
 * Run on a runtime: the kernels it takes, and whether the relaxed build's 4-bit products and MLPs, on two threads,
 * give the 128-bit build's bits on one (the integer sums are the same, the float steps too, and a thread computes
 * whole columns; the 128-bit build is judged against ONNX Runtime in kernels.test.ts), with its worker taking part.
 */
const SAME_BITS = `
const { wasmKernels, wasmKernelsOf } = await import('./src/runtime/wasm-kernels.ts');
const p = wasmKernelsOf('simd128');
const results = {};
for (const dot of ['accumulate', 'pairs']) {
let r;
try {
  r = wasmKernelsOf('relaxed-simd', dot);
} catch (err) {
  results[dot] = { refused: err.message };
  continue;
}
let seed = 7;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
let compared = 0, differ = 0;
// the worker starts in the background when a call first asks for it: until it has run a part
const warm = r.packQ4(new Uint8Array(896 * 128), new Float32Array(896 * 8), 896, 256);
for (let waited = 0; r.workerParts() === 0 && waited < 10000; waited += 10) {
  r.matmulQ4(warm, new Float32Array(4 * 896), 4, new Float32Array(4 * 256), 2);
  await new Promise((done) => setTimeout(done, 10));
}
const started = r.workerParts();
const same = (a, b) => { compared += a.length; for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) differ++; };
// n = 38 and 42: a quad of 2 columns paired with another (one row: two quads at a time) and left over
for (const [k, n] of [[64, 38], [96, 42], [896, 128], [4864, 96]]) {
  const b = Uint8Array.from({ length: (n * k) / 2 }, () => Math.floor(rnd() * 256));
  const s = Float32Array.from({ length: (n * k) / 32 }, () => (0.2 + rnd()) / Math.sqrt(k));
  const [wr, wp] = [r.packQ4(b, s, k, n), p.packQ4(b, s, k, n)];
  for (const m of [1, 3, 70]) {
    const x = Float32Array.from({ length: m * k }, (_, i) => (rnd() - 0.5) * (i % 97 === 0 ? 40 : 2));
    const [yr, yp] = [new Float32Array(m * n), new Float32Array(m * n)];
    r.matmulQ4(wr, x, m, yr, 2);
    p.matmulQ4(wp, x, m, yp, 1);
    same(yr, yp);
  }
}
const [h, i] = [256, 1024];
const pack = (kn, k, n, s8) => kn.packQ4(s8.b, s8.s, k, n);
const weights = [[h, i], [h, i], [i, h]].map(([k, n]) => ({ k, n, b: Uint8Array.from({ length: (n * k) / 2 }, () => Math.floor(rnd() * 256)), s: Float32Array.from({ length: (n * k) / 32 }, () => (0.2 + rnd()) / Math.sqrt(k)) }));
const [gr, ur, dr] = weights.map((w) => pack(r, w.k, w.n, w));
const [gp, up, dp] = weights.map((w) => pack(p, w.k, w.n, w));
for (const m of [1, 5, 9]) {
  const x = Float32Array.from({ length: m * h }, () => rnd() * 4 - 2);
  const [yr, yp] = [new Float32Array(m * h), new Float32Array(m * h)];
  r.mlpQ4(gr, ur, dr, x, m, yr, 2);
  p.mlpQ4(gp, up, dp, x, m, yp, 1);
  same(yr, yp);
}
results[dot] = { dot: r.dot, compared, differ, started, byWorker: r.workerParts() - started };
}
const { readFileSync } = await import('node:fs');
const imports = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync('native/kernels/svc_kernels_relaxed.wasm')));
console.log(JSON.stringify({ path: wasmKernels().path, dot: wasmKernels().dot, imports, results }));
`;

const nodeMajor = Number(process.versions.node.split('.')[0]);
/**
 * Each runtime's relaxed SIMD: Deno's V8 and Bun's JavaScriptCore have it; Node 20's V8 behind a flag, which svc
 * sets, and there its accumulating dot product gives wrong sums (svc's check at load must refuse that form).
 * The form each one takes by default: pairs on Bun and Node 20; where V8 has shipped relaxed SIMD, the faster of
 * the two on this CPU (timed at load: which it is depends on whether the CPU has VNNI).
 */
const EITHER = ['accumulate', 'pairs'];
const RUNTIMES = [
  { runtime: 'deno', cmd: 'node_modules/.bin/deno', args: ['eval', SAME_BITS], taken: EITHER, refused: [] as string[] },
  { runtime: 'bun', cmd: 'node_modules/.bin/bun', args: ['-e', SAME_BITS], taken: ['pairs'], refused: [] as string[] },
  {
    runtime: `node ${nodeMajor}`,
    cmd: process.execPath,
    args: ['--import', 'tsx', '--input-type=module', '-e', SAME_BITS],
    taken: nodeMajor < 21 ? ['pairs'] : EITHER,
    refused: nodeMajor < 21 ? ['accumulate'] : [],
  },
];

for (const { runtime, cmd, args, taken, refused } of RUNTIMES) {
  test(`on ${runtime}, the relaxed build (its memory its only import) is taken, ${taken.join(' or ')} dot products, and each form it allows gives the 128-bit build's bits`, () => {
    const out = execFileSync(cmd, args, { encoding: 'utf8' });
    const got = JSON.parse(out.trim().split('\n').at(-1)!);
    assert.equal(got.path, 'wasm-relaxed-simd');
    assert.ok(taken.includes(got.dot), `${got.dot} taken`);
    assert.deepEqual(got.imports, ONLY_MEMORY);
    for (const [dot, r] of Object.entries(got.results) as [string, Record<string, number | string>][]) {
      if (refused.includes(dot)) {
        assert.match(String(r.refused), /give wrong sums on this engine/, `${dot} must be refused`);
        continue;
      }
      assert.equal(r.dot, dot, `${dot}: ${r.refused}`);
      assert.ok(Number(r.compared) > 10000, `${dot}: ${r.compared} values compared`);
      assert.equal(r.differ, 0, `${dot}: ${r.differ} of ${r.compared} values differ`);
      assert.ok(Number(r.started) > 0 && Number(r.byWorker) > 0, `${dot}: the worker ran ${r.byWorker} parts of the compared calls`);
    }
  });
}

test("the modules' heap gives freed blocks back: calls after calls, of every size, do not grow the memory", () => {
  const kn = wasmKernelsOf('simd128');
  const [k, n] = [896, 640];
  const w = kn.packQ8(new Int8Array(k * n).map((_, i) => (i * 7) % 255 - 127), new Float32Array(n).fill(0.01), k, n, 0);
  const call = (m: number) => kn.matmulQ8(w, new Float32Array(m * k).fill(0.5), m, new Float32Array(m * n), 1);
  // the largest call first: the memory it grows to is enough for all the others, if freed blocks are reused
  call(300);
  const after = kn.memoryBytes();
  for (let i = 0; i < 600; i++) call(1 + ((i * 37) % 300));
  assert.equal(kn.memoryBytes(), after, 'the memory grew');
});

test("arrays in the kernels' memory (floats) are read where they lie, give the copied arrays' results, and are freed", () => {
  const kn = wasmKernelsOf('simd128');
  const [s, past, heads, kvHeads, d, rows] = [3, 40, 4, 2, 16, 64];
  const r = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + seed));
  const arrays = () => ({
    q: r(s * heads * d, 1),
    k: r(s * kvHeads * d, 2),
    v: r(s * kvHeads * d, 3),
    pos: BigInt64Array.from({ length: s }, (_, i) => BigInt(past + i)),
    cos: r((rows * d) / 2, 4),
    sin: r((rows * d) / 2, 5),
    pastK: r(kvHeads * past * d, 6),
    pastV: r(kvHeads * past * d, 7),
    mask: new Float32Array(s * (past + s)),
    out: new Float32Array(s * heads * d),
    newK: new Float32Array(s * kvHeads * d),
    newV: new Float32Array(s * kvHeads * d),
  });
  const copied = arrays();
  kn.attention(copied, s, heads, kvHeads, d, 4, 1);
  const before = kn.memoryBytes();
  for (let i = 0; i < 50; i++) {
    const held = arrays();
    const [pastK, pastV] = [kn.floats!(held.pastK.length)!, kn.floats!(held.pastV.length)!];
    pastK.set(held.pastK);
    pastV.set(held.pastV);
    kn.attention({ ...held, pastK, pastV }, s, heads, kvHeads, d, 4, 1);
    assert.deepEqual(held.out, copied.out);
    kn.freeFloats!(pastK);
    kn.freeFloats!(pastV);
    kn.freeFloats!(held.q); // not the kernels': left alone
  }
  assert.equal(kn.memoryBytes(), before, 'the memory grew');
});

test('SVC_WASM_KERNELS=0 turns them off, with that reason', () => {
  const code =
    "import('./src/runtime/wasm-kernels.ts').then((k) => console.log(JSON.stringify([k.wasmKernels() === undefined, k.wasmKernelsUnavailable()])))";
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', code], {
    env: { ...process.env, SVC_WASM_KERNELS: '0' },
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(out), [true, 'disabled by SVC_WASM_KERNELS=0']);
});

test('a kernel worker that fails to start is left out: the process goes on and the products are the same', () => {
  // a child whose every Worker runs a module that throws at once (syncBuiltinESMExports hands the replaced class
  // to the kernels' import of node:worker_threads)
  const script = `
import wt from 'node:worker_threads';
import { syncBuiltinESMExports } from 'node:module';
const Real = wt.Worker;
wt.Worker = class extends Real {
  constructor(_url, options) { super(new URL('data:text/javascript,throw new Error("no start")'), options); }
};
syncBuiltinESMExports();
const { wasmKernelsOf } = await import(${JSON.stringify(new URL('../../src/runtime/wasm-kernels.ts', import.meta.url).href)});
const kn = wasmKernelsOf('simd128');
const [k, n] = [256, 512];
const w = kn.packQ8(Int8Array.from({ length: k * n }, (_, i) => ((i * 37) % 255) - 127), new Float32Array(n).fill(0.01), k, n, 0);
const x = Float32Array.from({ length: 4 * k }, (_, i) => Math.sin(i));
const one = new Float32Array(4 * n), two = new Float32Array(4 * n);
kn.matmulQ8(w, x, 4, one, 1);
let same = true;
for (const end = Date.now() + 300; Date.now() < end; ) {
  kn.matmulQ8(w, x, 4, two, 2);
  same &&= two.every((v, i) => v === one[i]);
  await new Promise((r) => setTimeout(r, 5));
}
console.log(JSON.stringify({ same }));
`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', stdio: 'pipe' });
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), { same: true });
});
