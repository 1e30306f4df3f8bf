/**
 * `/api/create`: a custom model from a base model (`from`: a catalog model or a downloaded custom model)
 * and/or `files` (hub-style relative paths → digests of pushed blobs), optionally quantized (q8/q4 of fp32
 * ONNX weights), with Modelfile-style settings (system, template, parameters, license).
 *
 * `prepare` checks everything that can be checked without work (names, paths, digests, the file set,
 * quantize target, base model) and throws: those failures answer with their HTTP status. The returned
 * progress stream then does the work: a download of a catalog base model not local yet, assembly by hard
 * links, quantization (progress per weight), manifest, record. A failure there removes the assembly.
 */
import { createHash } from 'node:crypto';
import { readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServiceError, invalidArgument } from '../errors.ts';
import { blobNotFound, parseBlobDigest } from './blobs.ts';
import { installCustom, linkOrCopy, newCustomRepo } from './custom-store.ts';
import { DEFAULT_DTYPE_ORDER, REQUIRED_FILES, isSafeRepoPath, onnxPath } from './files.ts';
import { readLocalCopy, type LocalCopy, type ManifestFile } from './manifest.ts';
import { modelInUse, derivedRecord, destinationName, newAssemblyDir, retireReplaced, type ModelAdminContext, type NameLocks } from './manage.ts';
import { parseQuantize, quantizeOnnx, type QuantTarget } from './onnx-quantize.ts';
import type { PullProgress } from './progress.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import { deriveCapabilities, ownChatTemplate } from './show.ts';
import { DTYPES, type CustomModelRecord, type Dtype, type ModelKind, type ModelProfile, type ModelSpec } from './spec.ts';

export interface CreateRequest {
  name: string;
  from?: string;
  files?: Record<string, string>;
  adapters?: Record<string, string>;
  quantize?: string;
  system?: string;
  template?: string;
  parameters?: Record<string, unknown>;
  license?: string | string[];
}

interface Source { path: string; digest?: string; from?: { dir: string; sha256: string } }

interface Plan {
  name: string;
  base?: { spec: ModelSpec; local?: LocalCopy; pullName?: string; profile?: ModelProfile };
  /** Final file set before quantization, by relative path. */
  files: Map<string, Source>;
  dtype: Dtype;
  components: string[];
  quantize?: QuantTarget;
  profile: ModelProfile;
  kind: ModelKind;
  config: Record<string, any>;
}

const bad = (message: string, field?: string) => invalidArgument(message, field ? [{ field, message }] : undefined);

/** The dtype and ONNX components a file set provides (graphs named by transformers.js' suffixes). */
function graphsOf(paths: Iterable<string>): { dtype: Dtype; component: string }[] {
  const out: { dtype: Dtype; component: string }[] = [];
  for (const p of paths) {
    const m = /^onnx\/([A-Za-z0-9_]+?)(_fp16|_quantized|_int8|_uint8|_q4f16|_q4|_bnb4)?\.onnx$/.exec(p);
    if (!m) continue;
    const dtype = DTYPES.find((d) => onnxPath(m[1], d) === p);
    if (dtype) out.push({ dtype, component: m[1] });
  }
  return out;
}

export async function prepareCreate(ctx: ModelAdminContext, req: CreateRequest): Promise<Plan> {
  const name = destinationName(ctx.catalog, req.name, 'model');
  const userFiles = Object.entries(req.files ?? {});
  if (!req.from && userFiles.length === 0) throw bad('create needs "from" (a base model) and/or "files" (pushed blobs)', 'from');
  const quantize = req.quantize ? parseQuantize(req.quantize) : undefined;

  // Every referenced blob must be well-formed and pushed.
  const files = new Map<string, Source>();
  const layers: { path: string; digest: string }[] = [];
  for (const [path, digest] of userFiles) {
    if (!isSafeRepoPath(path)) throw bad(`invalid file name '${path}': a relative path inside the model folder is expected`, `files.${path}`);
    if (typeof digest !== 'string') throw bad(`files.${path} must be a digest string`, `files.${path}`);
    parseBlobDigest(digest);
    if (!(await ctx.blobs.has(digest))) throw blobNotFound(digest);
    files.set(path, { path, digest: `sha256:${parseBlobDigest(digest)}` });
    layers.push({ path, digest: `sha256:${parseBlobDigest(digest)}` });
  }
  for (const [path, digest] of Object.entries(req.adapters ?? {})) {
    parseBlobDigest(String(digest));
    if (!(await ctx.blobs.has(String(digest)))) throw blobNotFound(String(digest));
    // Merging a low-rank adapter needs the adapter's tensor names mapped onto the exported graph's
    // initializers, which ONNX exports do not keep reliably; refused rather than stored and ignored.
    throw bad(`adapters are not supported: low-rank adapter '${path}' cannot be merged into ONNX weights by this server; merge it before exporting the model`, `adapters.${path}`);
  }

  let base: Plan['base'];
  if (req.from) {
    const r = await resolveModel(req.from, ctx.catalog, ctx.registry).catch((e) => {
      if (e instanceof ServiceError && e.status === 400) throw bad(`invalid "from": ${e.message}`, 'from');
      throw e;
    });
    if (r.source === 'hub') throw new ServiceError(404, 'not_found', `model '${req.from}' not found; pull it before creating from it`);
    const local = await readLocalCopy(ctx.layout, r.spec.repo, r.spec.dtype);
    if (!local && r.source === 'custom') throw new ServiceError(404, 'not_found', `model '${req.from}' has no downloaded files; pull it first`);
    base = { spec: r.spec, local, pullName: local ? undefined : r.spec.name, profile: (r.spec as Partial<CustomModelRecord>).profile };
  }

  // The file set: the base model's files (known once local; a catalog base not downloaded yet is
  // checked after its pull), overridden by `files`.
  const userGraphs = graphsOf(files.keys());
  if (base?.local) {
    for (const f of base.local.manifest.files) {
      if (files.has(f.path)) continue;
      // A graph given in `files` replaces the base's weights: its own graphs are not carried over.
      if (userGraphs.length && (graphsOf([f.path]).length || /\.onnx_data(_\d+)?$/.test(f.path))) continue;
      files.set(f.path, { path: f.path, from: { dir: base.local.dir, sha256: f.sha256 } });
    }
  }
  let dtype: Dtype;
  let components: string[];
  if (userGraphs.length) {
    dtype = DEFAULT_DTYPE_ORDER.find((d) => userGraphs.some((g) => g.dtype === d))!;
    components = [...new Set(userGraphs.filter((g) => g.dtype === dtype).map((g) => g.component))];
  } else if (base) {
    dtype = base.spec.dtype;
    components = base.spec.components;
  } else {
    throw bad('files has no ONNX graph: name the weights onnx/model.onnx (or onnx/model_<dtype>.onnx as transformers.js does)', 'files');
  }
  if (base?.local || !base) {
    const missing = REQUIRED_FILES.filter((f) => !files.has(f));
    if (missing.length) throw bad(`missing file(s) ${missing.join(', ')}: a model needs config.json, tokenizer.json and tokenizer_config.json`, 'files');
  }
  if (quantize && dtype !== 'fp32') throw bad(`quantize needs fp32 weights (onnx/model.onnx); this model's weights are ${dtype}`, 'quantize');

  const config = files.has('config.json') ? await readConfig(ctx, files.get('config.json')!) : {};
  const kind = base && !userGraphs.length ? base.spec.kind : kindOf(config);
  const license = req.license === undefined ? undefined : Array.isArray(req.license) ? req.license.map(String) : [String(req.license)];
  const profile: ModelProfile = {
    ...base?.profile,
    ...(base ? { parent: base.spec.name } : {}),
    ...(req.system !== undefined ? { system: req.system } : {}),
    ...(req.template !== undefined ? { template: req.template } : {}),
    ...(req.parameters !== undefined ? { parameters: { ...base?.profile?.parameters, ...req.parameters } } : {}),
    ...(license ? { license } : {}),
    ...(layers.length ? { layers } : {}),
  };
  return { name, base, files, dtype, components, quantize, profile, kind, config };
}

async function readConfig(ctx: ModelAdminContext, s: Source): Promise<Record<string, any>> {
  const path = s.digest ? ctx.blobs.path(s.digest) : join(s.from!.dir, s.path);
  try {
    const v = JSON.parse(await readFile(path, 'utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch { /* reported below */ }
  throw bad('config.json is not a JSON object', 'files.config.json');
}

function kindOf(config: Record<string, any>): ModelKind {
  const archs: string[] = Array.isArray(config.architectures) ? config.architectures : [];
  if (config.model_type === 'whisper' || archs.some((a) => /SpeechSeq2Seq|^Whisper/.test(a))) return 'speech';
  if (archs.some((a) => /ForCausalLM|ForConditionalGeneration/.test(a))) return 'generation';
  if (archs.some((a) => /ForSequenceClassification/.test(a))) return 'reranker';
  return 'embedding';
}

/** Runs a prepared create; the stream ends with `{status:'success'}`. */
export async function* runCreate(ctx: ModelAdminContext, locks: NameLocks, plan: Plan): AsyncGenerator<PullProgress> {
  if (plan.base && !plan.base.local) {
    // A catalog base model not downloaded yet: download on demand, its progress forwarded.
    const handle = await ctx.pulls.pull(plan.base.pullName!);
    for await (const ev of handle.progress()) if (ev.status !== 'success') yield ev;
    const pulled = await handle.done;
    const again = await prepareLocalBase(plan, pulled.local);
    if (again) throw again;
  }
  yield { status: 'parsing model files' };
  const steps: PullProgress[] = [];
  let wake: (() => void) | undefined;
  const work = locks.run(plan.name, () => assemble(ctx, plan, (ev) => { steps.push(ev); wake?.(); }));
  let finished = false;
  work.then(() => { finished = true; wake?.(); }, () => { finished = true; wake?.(); });
  while (!finished || steps.length) {
    if (steps.length) { yield steps.shift()!; continue; }
    await new Promise<void>((r) => (wake = r));
    wake = undefined;
  }
  await work;
  yield { status: 'success' };
}

/** Fills the file set from a base model downloaded during the create; returns the error to throw, if any. */
async function prepareLocalBase(plan: Plan, local: LocalCopy): Promise<ServiceError | undefined> {
  plan.base!.local = local;
  const userGraphs = graphsOf([...plan.files.values()].filter((s) => s.digest).map((s) => s.path));
  for (const f of local.manifest.files) {
    if (plan.files.has(f.path)) continue;
    if (userGraphs.length && (graphsOf([f.path]).length || /\.onnx_data(_\d+)?$/.test(f.path))) continue;
    plan.files.set(f.path, { path: f.path, from: { dir: local.dir, sha256: f.sha256 } });
  }
  const missing = REQUIRED_FILES.filter((f) => !plan.files.has(f));
  if (missing.length) return bad(`missing file(s) ${missing.join(', ')}`);
  return undefined;
}

async function assemble(ctx: ModelAdminContext, plan: Plan, emit: (ev: PullProgress) => void): Promise<CustomModelRecord> {
  if (ctx.usage.isServing(plan.name)) throw modelInUse(plan.name);
  await ctx.layout.assertWritable();
  const old = await ctx.registry.get(plan.name);
  const stage = newAssemblyDir(ctx.layout);
  try {
    const manifest = new Map<string, ManifestFile>();
    for (const s of plan.files.values()) {
      const src = s.digest ? ctx.blobs.path(s.digest) : join(s.from!.dir, s.path);
      if (s.digest) emit({ status: `using existing layer ${s.digest}`, digest: s.digest });
      await linkOrCopy(src, join(stage, s.path));
      const size = (await stat(src)).size;
      manifest.set(s.path, { path: s.path, size, sha256: s.digest ? s.digest.slice(7) : s.from!.sha256 });
    }
    let dtype = plan.dtype;
    if (plan.quantize) {
      const target = plan.quantize;
      for (const c of plan.components) {
        const input = onnxPath(c, 'fp32');
        const output = onnxPath(c, target);
        const status = `quantizing fp32 model to ${target}`;
        const digest = manifest.get(input) ? `sha256:${manifest.get(input)!.sha256}` : undefined;
        const bytes = await readFile(join(stage, input));
        const r = await quantizeOnnx(bytes, target, {
          dir: join(stage, 'onnx'),
          onProgress: (completed, total) => emit({ status, ...(digest ? { digest } : {}), total, completed }),
        });
        await writeFile(join(stage, output), r.bytes);
        manifest.set(output, { path: output, size: r.bytes.byteLength, sha256: createHash('sha256').update(r.bytes).digest('hex') });
        // The fp32 graph and its external data are not part of the quantized model.
        for (const p of [...manifest.keys()]) {
          if (p === input || p.startsWith(`${input}_data`)) { manifest.delete(p); await unlink(join(stage, p)); }
        }
      }
      dtype = target;
    }
    emit({ status: 'writing manifest' });
    const repo = newCustomRepo(plan.name);
    await installCustom(ctx.layout, repo, stage, dtype, [...manifest.values()]);
    const template = plan.profile.template ?? (await ownChatTemplate(ctx.layout.modelDir(repo)));
    const capabilities = deriveCapabilities(plan.kind, plan.config, template, plan.base?.spec.capabilities ?? []);
    const family = typeof plan.config.model_type === 'string' ? plan.config.model_type : plan.base?.spec.details?.family;
    const details = {
      ...(family ? { family } : {}),
      ...(plan.base?.spec.details?.parameter_size && !graphsOf([...plan.files.values()].filter((s) => s.digest).map((s) => s.path)).length
        ? { parameter_size: plan.base.spec.details.parameter_size } : {}),
      quantization_level: dtype.toUpperCase(),
    };
    const record: CustomModelRecord = plan.base
      ? derivedRecord(plan.base.spec, { name: plan.name, repo, dtype, source: 'create', kind: plan.kind, capabilities, components: plan.components, details, profile: plan.profile })
      : {
        name: plan.name, repo, dtype, kind: plan.kind, capabilities, components: plan.components, details,
        ...(plan.kind === 'embedding' ? { embedding: { pooling: 'mean' as const, normalize: true } } : {}),
        source: 'create', unverified: true, created_at: new Date().toISOString(), profile: plan.profile,
      };
    await ctx.registry.put(record);
    await retireReplaced(ctx, old, record);
    return record;
  } catch (err) {
    await rm(stage, { recursive: true, force: true });
    throw err;
  }
}
