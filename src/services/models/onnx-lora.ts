/**
 * Merging a PEFT LoRA adapter into the fp32 weights of an ONNX graph.
 *
 * The adapter is PEFT's on-disk form: `adapter_config.json` (`r`, `lora_alpha`, `target_modules`,
 * `fan_in_fan_out`, `use_rslora`, `rank_pattern`, `alpha_pattern`) and `adapter_model.safetensors`, whose
 * tensors are named `base_model.model.<module path>.lora_A.weight` ([r, in]) and `...lora_B.weight`
 * ([out, r]). safetensors is read by hand: an 8-byte little-endian header length, a JSON header giving each
 * tensor's dtype, shape and data offsets, then raw little-endian data (F32, F16 and BF16 are accepted).
 *
 * ONNX exports lose initializer names (`onnx::MatMul_531`) but keep the module path in node names
 * (`/layers.0/q_proj/MatMul`, or `/model/layers.0/self_attn/q_proj/MatMul` from optimum): each adapted
 * module is matched to the MatMul whose name path is a subsequence of the module path ending at the same
 * module with the same layer indices, and that MatMul's weight initializer (stored [in, out], torch's weight
 * transposed) becomes W + scale·(B·A)ᵀ, scale = lora_alpha / r (lora_alpha / √r with rslora). Conv1D-style
 * modules (`fan_in_fan_out`) export the same [in, out] MatMul weight, so the ONNX update is the same.
 *
 * Everything here fails with 400 errors naming what is wrong; nothing is written.
 */
import { ServiceError } from '../errors.ts';
import { floats } from './onnx-quantize.ts';
import { decodeFields, first, type GraphNode, indexGraph, ONNX, tensor, type WireField, WireWriter } from './onnx-wire.ts';

export interface LoraModule {
  /** Module path inside the model, e.g. `model.layers.0.self_attn.q_proj`. */
  path: string;
  r: number;
  inFeatures: number;
  outFeatures: number;
  /** [r, in], row-major. */
  A: Float32Array;
  /** [out, r], row-major. */
  B: Float32Array;
  scale: number;
}

export interface LoraAdapter {
  modules: LoraModule[];
  rslora: boolean;
}

interface StTensor {
  dtype: string;
  shape: number[];
  data: Float32Array;
}

const refuse = (m: string) => new ServiceError(400, 'invalid_argument', m);
const MAX_PROTO = 2 ** 31 - 1;

/** Tensors of a safetensors file, converted to fp32. */
export function parseSafetensors(bytes: Uint8Array, label: string): Map<string, StTensor> {
  if (bytes.byteLength < 8) throw refuse(`${label} is not a safetensors file (shorter than its 8-byte header length)`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(dv.getBigUint64(0, true));
  if (headerLen > bytes.byteLength - 8 || headerLen > 100_000_000) {
    throw refuse(`${label} is not a safetensors file (header length ${headerLen} exceeds the file)`);
  }
  // deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
  let header: Record<string, any>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen)));
    if (!header || typeof header !== 'object' || Array.isArray(header)) throw new Error('not an object');
  } catch (e) {
    throw refuse(`${label} is not a safetensors file (its header is not a JSON object: ${(e as Error).message})`);
  }
  const dataStart = 8 + headerLen;
  const out = new Map<string, StTensor>();
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const shape: unknown = t?.shape;
    const offs: unknown = t?.data_offsets;
    if (
      !Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0) || !Array.isArray(offs) || offs.length !== 2 ||
      !offs.every((o) => Number.isInteger(o) && o >= 0)
    ) {
      throw refuse(`${label}: tensor '${name}' has a malformed header entry`);
    }
    const size = ({ F32: 4, F16: 2, BF16: 2 } as Record<string, number>)[t.dtype];
    if (!size) throw refuse(`${label}: tensor '${name}' has dtype ${t.dtype}; F32, F16 and BF16 are supported`);
    const count = shape.reduce((a: number, b: number) => a * b, 1);
    const [begin, end] = offs as number[];
    if (end - begin !== count * size || dataStart + end > bytes.byteLength) {
      throw refuse(
        `${label}: tensor '${name}' data (${end - begin} bytes at ${begin}) does not fit its shape [${
          shape.join(', ')
        }] ${t.dtype} or the file`,
      );
    }
    const data = new Float32Array(count);
    const base = bytes.byteOffset + dataStart + begin;
    const v = new DataView(bytes.buffer, base, end - begin);
    if (t.dtype === 'F32') { for (let i = 0; i < count; i++) data[i] = v.getFloat32(i * 4, true); }
    else if (t.dtype === 'F16') { for (let i = 0; i < count; i++) data[i] = halfToFloat(v.getUint16(i * 2, true)); }
    else {
      const f = new DataView(new ArrayBuffer(4));
      for (let i = 0; i < count; i++) {
        f.setUint32(0, v.getUint16(i * 2, true) << 16);
        data[i] = f.getFloat32(0);
      }
    }
    out.set(name, { dtype: t.dtype, shape: shape as number[], data });
  }
  return out;
}

export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** PEFT pattern keys match a module path as `(.*\.)?key$` (regular expressions allowed). */
function patternValue(patterns: unknown, path: string): number | undefined {
  if (!patterns || typeof patterns !== 'object') return undefined;
  for (const [k, v] of Object.entries(patterns as Record<string, unknown>)) {
    let re: RegExp;
    try {
      re = new RegExp(`(^|\\.)(${k})$`);
    } catch {
      continue;
    }
    if (re.test(path) && typeof v === 'number') return v;
  }
  return undefined;
}

function targeted(target: unknown, path: string): boolean {
  if (target === undefined || target === null || target === 'all-linear') return true;
  if (typeof target === 'string') {
    try {
      return new RegExp(`^(?:${target})$`).test(path) || path === target || path.endsWith(`.${target}`);
    } catch {
      return path.endsWith(`.${target}`);
    }
  }
  if (Array.isArray(target)) return target.some((t) => typeof t === 'string' && (path === t || path.endsWith(`.${t}`)));
  return true;
}

/**
 * A PEFT LoRA adapter from its config and weights. `files` maps the names the request gave to blob bytes:
 * one `*.json` (adapter_config.json) and one or more `*.safetensors`.
 */
export function readLoraAdapter(files: Map<string, Uint8Array>): LoraAdapter {
  const names = [...files.keys()];
  const bin = names.find((n) => /\.(bin|pt|pth|gguf|ggml)$/i.test(n));
  if (bin) {
    throw refuse(
      `adapter file '${bin}' is not supported: give a PEFT LoRA adapter as adapter_config.json + adapter_model.safetensors (pickled .bin and GGUF adapters are not read)`,
    );
  }
  const configName = names.find((n) => /(^|\/)adapter_config\.json$/.test(n)) ?? names.find((n) => n.endsWith('.json'));
  if (!configName) throw refuse('adapters needs adapter_config.json (the PEFT config giving r and lora_alpha) beside the adapter weights');
  const weightNames = names.filter((n) => n.endsWith('.safetensors'));
  if (!weightNames.length) throw refuse('adapters needs adapter_model.safetensors (the LoRA weights) beside adapter_config.json');
  const other = names.find((n) => n !== configName && !weightNames.includes(n));
  if (other) throw refuse(`adapter file '${other}' is not understood: adapters takes adapter_config.json and adapter_model.safetensors`);

  // deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
  let config: Record<string, any>;
  try {
    config = JSON.parse(new TextDecoder().decode(files.get(configName)!));
    if (!config || typeof config !== 'object' || Array.isArray(config)) throw new Error('not an object');
  } catch (e) {
    throw refuse(`${configName} is not a JSON object: ${(e as Error).message}`);
  }
  if (config.peft_type !== undefined && config.peft_type !== 'LORA') {
    throw refuse(`${configName}: peft_type '${config.peft_type}' is not supported; only LORA adapters can be merged`);
  }
  if (config.use_dora) throw refuse(`${configName}: DoRA adapters (use_dora) are not supported; only plain LoRA can be merged`);
  if (!Number.isInteger(config.r) || config.r <= 0) throw refuse(`${configName}: "r" must be a positive integer (the LoRA rank)`);
  if (typeof config.lora_alpha !== 'number' || !Number.isFinite(config.lora_alpha)) {
    throw refuse(`${configName}: "lora_alpha" must be a number`);
  }
  const rslora = config.use_rslora === true;

  const tensors = new Map<string, StTensor>();
  for (const n of weightNames) for (const [k, t] of parseSafetensors(files.get(n)!, n)) tensors.set(k, t);
  const pairs = new Map<string, { A?: StTensor; B?: StTensor }>();
  for (const [key, t] of tensors) {
    const m = /^(?:base_model\.model\.)?(.+)\.lora_([AB])(?:\.[A-Za-z0-9_-]+)?\.weight$/.exec(key);
    if (!m) {
      const why = /lora_embedding_/.test(key)
        ? 'embedding LoRA (lora_embedding_A/B) is not supported'
        : /\.bias$/.test(key)
        ? 'trained biases are not supported'
        : 'only lora_A/lora_B weights can be merged (modules_to_save and other full weights are not)';
      throw refuse(`adapter tensor '${key}': ${why}`);
    }
    const p = pairs.get(m[1]) ?? {};
    p[m[2] as 'A' | 'B'] = t;
    pairs.set(m[1], p);
  }
  if (!pairs.size) throw refuse('the adapter weights hold no lora_A/lora_B tensors');

  const modules: LoraModule[] = [];
  for (const [path, { A, B }] of pairs) {
    if (!A || !B) throw refuse(`adapter module '${path}' has lora_${A ? 'A' : 'B'} but no lora_${A ? 'B' : 'A'} weight`);
    if (!targeted(config.target_modules, path)) {
      throw refuse(`adapter module '${path}' is not among target_modules ${JSON.stringify(config.target_modules)}`);
    }
    const r = patternValue(config.rank_pattern, path) ?? config.r;
    const alpha = patternValue(config.alpha_pattern, path) ?? config.lora_alpha;
    if (A.shape.length !== 2 || B.shape.length !== 2 || A.shape[0] !== r || B.shape[1] !== r) {
      throw refuse(
        `adapter module '${path}': lora_A is [${A.shape.join(', ')}] and lora_B [${
          B.shape.join(', ')
        }]; expected [${r}, in] and [out, ${r}] for r=${r}`,
      );
    }
    modules.push({
      path,
      r,
      inFeatures: A.shape[1],
      outFeatures: B.shape[0],
      A: A.data,
      B: B.data,
      scale: rslora ? alpha / Math.sqrt(r) : alpha / r,
    });
  }
  return { modules, rslora };
}

type Node = GraphNode;

/** Atoms of a node name's module path: `/model/layers.0/self_attn/q_proj/MatMul` → model layers 0 self_attn q_proj. */
function nodeAtoms(name: string): string[] | undefined {
  const segs = name.replace(/^\/+/, '').split('/');
  if (segs.length < 2) return undefined;
  return segs.slice(0, -1).flatMap((s) => s.split('.')).filter(Boolean);
}

/** How well a node's path names a module: its atoms in order within the module's, same last atom, same indices; 0 when not. */
function matchScore(node: string[], module: string[]): number {
  if (!node.length || node.at(-1) !== module.at(-1)) return 0;
  const nums = (a: string[]) => a.filter((x) => /^\d+$/.test(x)).join('.');
  if (nums(node) !== nums(module)) return 0;
  let j = 0;
  for (const a of module) if (j < node.length && a === node[j]) j++;
  return j === node.length ? node.length : 0;
}

export interface LoraMergeResult {
  /** The rewritten graph; absent for a dry run or when nothing in this graph is adapted. */
  bytes?: Uint8Array;
  /** Adapter module path → the initializer it updates in this graph. */
  matched: Map<string, string>;
}

export interface LoraMergeOptions {
  /** Directory of the graph file, for weights stored as external data. */
  dir: string;
  /** Only match and check shapes. */
  dryRun?: boolean;
  onModule?: (path: string) => void;
}

/**
 * Matches the adapter's modules to this graph's MatMul weights (modules found in no MatMul are left out of
 * `matched`: the caller decides, since a model can have several graphs) and, unless `dryRun`, merges them.
 */
export async function mergeLoraOnnx(input: Uint8Array, adapter: LoraAdapter, opts: LoraMergeOptions): Promise<LoraMergeResult> {
  let model: WireField[];
  let graph: WireField[];
  try {
    model = decodeFields(input);
    const g = first(model, ONNX.model.graph);
    if (!g?.bytes) throw new Error('no graph');
    graph = decodeFields(g.bytes);
  } catch (e) {
    throw refuse(`the ONNX graph cannot be read: ${(e as Error).message}`);
  }
  const { inits, nodes } = indexGraph(graph);
  const candidates = nodes
    .filter((n) => n.opType === 'MatMul' && (n.domain === '' || n.domain === 'ai.onnx') && inits.has(n.inputs[1]))
    .map((n) => ({ n, atoms: nodeAtoms(n.name) }))
    .filter((c): c is { n: Node; atoms: string[] } => !!c.atoms);

  const matched = new Map<string, string>();
  const owner = new Map<string, string>();
  for (const m of adapter.modules) {
    const atoms = m.path.split('.').filter(Boolean);
    let best = 0;
    let hits: Node[] = [];
    for (const c of candidates) {
      const s = matchScore(c.atoms, atoms);
      if (s > best) {
        best = s;
        hits = [c.n];
      } else if (s && s === best) hits.push(c.n);
    }
    if (!hits.length) continue;
    const weights = [...new Set(hits.map((h) => h.inputs[1]))];
    if (weights.length > 1) {
      throw refuse(
        `adapter module '${m.path}' matches several MatMul nodes (${
          hits.map((h) => h.name).join(', ')
        }); cannot tell which weight it adapts`,
      );
    }
    const w = inits.get(weights[0])!;
    if (w.dataType !== ONNX.dtype.FLOAT || w.dims.length !== 2) {
      throw refuse(
        `adapter module '${m.path}' maps to MatMul '${
          hits[0].name
        }' whose weight is not a 2-D float32 tensor; only fp32 weights can be merged`,
      );
    }
    if (w.dims[0] !== m.inFeatures || w.dims[1] !== m.outFeatures) {
      throw refuse(
        `adapter module '${m.path}': lora_B·lora_A is [${m.outFeatures}, ${m.inFeatures}] but the weight of '${hits[0].name}' is [${
          w.dims[1]
        }, ${w.dims[0]}] ([out, in]); the adapter was trained for a different model`,
      );
    }
    if (owner.has(w.name)) throw refuse(`adapter modules '${owner.get(w.name)}' and '${m.path}' both map to weight '${w.name}'`);
    const users = nodes.filter((n) => n.inputs.includes(w.name) && !hits.includes(n));
    if (users.length) {
      throw refuse(
        `adapter module '${m.path}': its weight '${w.name}' is shared with ${
          users.map((u) => u.name || u.opType).join(', ')
        }; merging would change those too`,
      );
    }
    owner.set(w.name, m.path);
    matched.set(m.path, w.name);
  }
  if (opts.dryRun || !matched.size) return { matched };

  const updated = new Map<number, WireWriter>();
  for (const m of adapter.modules) {
    const name = matched.get(m.path);
    if (!name) continue;
    const t = inits.get(name)!;
    const W = floats(t, opts.dir);
    addDelta(W, m);
    const raw = new Uint8Array(W.buffer, W.byteOffset, W.byteLength);
    updated.set(t.index, tensor(t.name, t.dims, t.dataType, littleEndian(raw), t.fields));
    opts.onModule?.(m.path);
    await new Promise((r) => setImmediate(r));
  }
  const g = new WireWriter();
  graph.forEach((f, index) => {
    const u = updated.get(index);
    if (u) g.message(ONNX.graph.initializer, u);
    else g.field(f);
  });
  const out = new WireWriter();
  for (const f of model) {
    if (f.no === ONNX.model.graph) out.message(ONNX.model.graph, g);
    else out.field(f);
  }
  if (out.length > MAX_PROTO) throw refuse(`the merged graph would be ${out.length} bytes, above ONNX's 2 GiB single-file limit`);
  return { bytes: out.finish(), matched };
}

/** W [in, out] += scale · (B·A)ᵀ, i.e. W[i][o] += scale · Σ_k B[o][k]·A[k][i]. */
export function addDelta(W: Float32Array, m: LoraModule): void {
  const { r, inFeatures: I, outFeatures: O, A, B, scale } = m;
  const col = new Float64Array(r);
  for (let i = 0; i < I; i++) {
    for (let k = 0; k < r; k++) col[k] = A[k * I + i];
    const row = i * O;
    for (let o = 0; o < O; o++) {
      let s = 0;
      const b = o * r;
      for (let k = 0; k < r; k++) s += B[b + k] * col[k];
      W[row + o] = W[row + o] + scale * s;
    }
  }
}

const LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
function littleEndian(raw: Uint8Array): Uint8Array {
  if (LE) return raw;
  const out = new Uint8Array(raw.byteLength);
  const v = new DataView(out.buffer);
  const f = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  f.forEach((x, i) => v.setFloat32(i * 4, x, true));
  return out;
}
