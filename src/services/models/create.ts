/**
 * `/api/create`: a custom model from a base model (`from`: a catalog model or a downloaded custom model)
 * and/or `files` (hub-style relative paths → digests of pushed blobs), optionally with a PEFT LoRA adapter
 * (`adapters`) merged into the fp32 weights, optionally quantized (q8/q4 of fp32 ONNX weights, after the
 * merge), with Modelfile-style settings (system, template, parameters, license).
 *
 * `prepare` checks everything that can be checked without work (names, paths, digests, the file set,
 * quantize target, base model) and throws: those failures answer with their HTTP status. The returned
 * progress stream then does the work: a download of a catalog base model not local yet, assembly by hard
 * links, the adapter merge (progress per module), quantization (progress per weight), manifest, record.
 * A failure there removes the assembly.
 */
import { createHash } from 'node:crypto';
import { readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidArgument, ServiceError } from '../errors.ts';
import { fromOllamaOptions } from '../chat/params.ts';
import { blobNotFound, parseBlobDigest } from './blobs.ts';
import { installCustom, linkOrCopy, newCustomRepo } from './custom-store.ts';
import { DEFAULT_DTYPE_ORDER, isSafeRepoPath, onnxPath, REQUIRED_FILES } from './files.ts';
import { type LocalCopy, type ManifestFile, readLocalCopy } from './manifest.ts';
import {
  derivedRecord,
  destinationName,
  type ModelAdminContext,
  modelInUse,
  type NameLocks,
  newAssemblyDir,
  retireReplaced,
} from './manage.ts';
import { type LoraAdapter, mergeLoraOnnx, readLoraAdapter } from './onnx-lora.ts';
import { parseQuantize, quantizeOnnx, type QuantTarget } from './onnx-quantize.ts';
import type { PullProgress } from './progress.ts';
import { resolveModel } from './resolve.ts';
import { deriveCapabilities, ownChatTemplate } from './show.ts';
import { type CustomModelRecord, type Dtype, DTYPES, type ModelKind, type ModelProfile, type ModelSpec } from './spec.ts';

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

interface Source {
  path: string;
  digest?: string;
  from?: { dir: string; sha256: string };
}

interface Plan {
  name: string;
  base?: { spec: ModelSpec; local?: LocalCopy; pullName?: string; profile?: ModelProfile };
  /** Final file set before quantization, by relative path. */
  files: Map<string, Source>;
  dtype: Dtype;
  components: string[];
  quantize?: QuantTarget;
  /** A PEFT LoRA adapter merged into the fp32 weights before any quantization. */
  adapter?: LoraAdapter;
  profile: ModelProfile;
  kind: ModelKind;
  // deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
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
  // Parameters are checked as a request's options would be: stored wrong, the model could never serve.
  if (req.parameters !== undefined) {
    if (req.parameters === null || typeof req.parameters !== 'object' || Array.isArray(req.parameters)) {
      throw bad('parameters must be an object of options', 'parameters');
    }
    fromOllamaOptions(req.parameters, 'parameters');
  }

  // Every referenced blob must be well-formed and pushed.
  const files = new Map<string, Source>();
  const layers: { path: string; digest: string }[] = [];
  for (const [path, digest] of userFiles) {
    if (!isSafeRepoPath(path)) {
      throw bad(`invalid file name '${path}': a relative path inside the model folder is expected`, `files.${path}`);
    }
    if (typeof digest !== 'string') throw bad(`files.${path} must be a digest string`, `files.${path}`);
    parseBlobDigest(digest);
    if (!(await ctx.blobs.has(digest))) throw blobNotFound(digest);
    files.set(path, { path, digest: `sha256:${parseBlobDigest(digest)}` });
    layers.push({ path, digest: `sha256:${parseBlobDigest(digest)}` });
  }
  // A PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors), read and checked now; merged
  // into the fp32 graph during the assembly (onnx-lora.ts).
  let adapter: LoraAdapter | undefined;
  const adapterFiles = Object.entries(req.adapters ?? {});
  if (adapterFiles.length) {
    const bytes = new Map<string, Uint8Array>();
    for (const [path, digest] of adapterFiles) {
      if (typeof digest !== 'string') throw bad(`adapters.${path} must be a digest string`, `adapters.${path}`);
      parseBlobDigest(digest);
      if (!(await ctx.blobs.has(digest))) throw blobNotFound(digest);
      bytes.set(path, await readFile(ctx.blobs.path(`sha256:${parseBlobDigest(digest)}`)));
    }
    adapter = readLoraAdapter(bytes);
  }

  let base: Plan['base'];
  if (req.from) {
    const r = await resolveModel(req.from, ctx.catalog, ctx.registry).catch((e) => {
      if (e instanceof ServiceError && e.status === 400) throw bad(`invalid "from": ${e.message}`, 'from');
      throw e;
    });
    if (r.source === 'hub') throw new ServiceError(404, 'not_found', `model '${req.from}' not found; pull it before creating from it`);
    const local = await readLocalCopy(ctx.layout, r.spec.repo, r.spec.dtype);
    if (!local && r.source === 'custom') {
      throw new ServiceError(404, 'not_found', `model '${req.from}' has no downloaded files; pull it first`);
    }
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
    if (missing.length) {
      throw bad(`missing file(s) ${missing.join(', ')}: a model needs config.json, tokenizer.json and tokenizer_config.json`, 'files');
    }
  }
  if (adapter && dtype !== 'fp32') {
    throw bad(
      `adapters can only be merged into fp32 weights (onnx/model.onnx); this model's weights are ${dtype}, already quantized. ` +
        'Create from an fp32 model with adapters and quantize (q8/q4) to get a quantized model with the adapter merged',
      'adapters',
    );
  }
  if (quantize && dtype !== 'fp32') {
    throw bad(`quantize needs fp32 weights (onnx/model.onnx); this model's weights are ${dtype}`, 'quantize');
  }
  // With every graph at hand (a local base, or pushed files), the adapter's modules are matched now so
  // that a module no MatMul has, or a shape mismatch, answers 400 before any work.
  if (adapter && (base?.local || !base)) await matchAdapter(ctx, files, components, adapter);

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
  return { name, base, files, dtype, components, quantize, adapter, profile, kind, config };
}

/**
 * Matches the adapter's modules to the components' fp32 graphs without merging; 400 naming any module that
 * no graph has (and, from onnx-lora.ts, any shape mismatch). Returns how many modules each component merges.
 */
async function matchAdapter(
  ctx: ModelAdminContext,
  files: Map<string, Source>,
  components: string[],
  adapter: LoraAdapter,
): Promise<Map<string, number>> {
  const found = new Set<string>();
  const counts = new Map<string, number>();
  for (const c of components) {
    const s = files.get(onnxPath(c, 'fp32'));
    if (!s) throw bad(`adapters need the fp32 graph ${onnxPath(c, 'fp32')}, which the model does not have`, 'adapters');
    const path = s.digest ? ctx.blobs.path(s.digest) : join(s.from!.dir, s.path);
    const { matched } = await mergeLoraOnnx(await readFile(path), adapter, { dir: '', dryRun: true });
    for (const m of matched.keys()) found.add(m);
    counts.set(c, matched.size);
  }
  const missing = adapter.modules.filter((m) => !found.has(m.path)).map((m) => m.path);
  if (missing.length) {
    throw bad(
      `adapter module(s) ${
        missing.map((m) => `'${m}'`).join(', ')
      } match no MatMul weight of the model's ONNX graph (node names are matched by module path, e.g. /model/layers.0/self_attn/q_proj/MatMul); the adapter was trained for a different architecture`,
      'adapters',
    );
  }
  return counts;
}

// deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
async function readConfig(ctx: ModelAdminContext, s: Source): Promise<Record<string, any>> {
  const path = s.digest ? ctx.blobs.path(s.digest) : join(s.from!.dir, s.path);
  try {
    const v = JSON.parse(await readFile(path, 'utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch { /* reported below */ }
  throw bad('config.json is not a JSON object', 'files.config.json');
}

// deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
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
  const work = locks.run(plan.name, () =>
    assemble(ctx, plan, (ev) => {
      steps.push(ev);
      wake?.();
    }));
  let finished = false;
  work.then(() => {
    finished = true;
    wake?.();
  }, () => {
    finished = true;
    wake?.();
  });
  while (!finished || steps.length) {
    if (steps.length) {
      yield steps.shift()!;
      continue;
    }
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
    if (plan.adapter) {
      // Merged into the staged fp32 graphs. Staged files are hard links to blobs and to the base model:
      // the merged graph is written beside and renamed over its link, never written through it.
      const sources = new Map([...manifest.values()].map((f) => [f.path, { path: f.path, from: { dir: stage, sha256: f.sha256 } }]));
      const counts = await matchAdapter(ctx, sources, plan.components, plan.adapter);
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      let completed = 0;
      for (const c of plan.components) {
        if (!counts.get(c)) continue;
        const input = onnxPath(c, 'fp32');
        const r = await mergeLoraOnnx(await readFile(join(stage, input)), plan.adapter, {
          dir: join(stage, 'onnx'),
          onModule: () => emit({ status: 'applying adapter', total, completed: ++completed }),
        });
        const tmp = join(stage, `${input}.svc-lora`);
        await writeFile(tmp, r.bytes!);
        await rename(tmp, join(stage, input));
        manifest.set(input, { path: input, size: r.bytes!.byteLength, sha256: createHash('sha256').update(r.bytes!).digest('hex') });
      }
    }
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
          if (p === input || p.startsWith(`${input}_data`)) {
            manifest.delete(p);
            await unlink(join(stage, p));
          }
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
        ? { parameter_size: plan.base.spec.details.parameter_size }
        : {}),
      quantization_level: dtype.toUpperCase(),
    };
    const record: CustomModelRecord = plan.base
      ? derivedRecord(plan.base.spec, {
        name: plan.name,
        repo,
        dtype,
        source: 'create',
        kind: plan.kind,
        capabilities,
        components: plan.components,
        details,
        profile: plan.profile,
      })
      : {
        name: plan.name,
        repo,
        dtype,
        kind: plan.kind,
        capabilities,
        components: plan.components,
        details,
        ...(plan.kind === 'embedding' ? { embedding: { pooling: 'mean' as const, normalize: true } } : {}),
        source: 'create',
        unverified: true,
        created_at: new Date().toISOString(),
        profile: plan.profile,
      };
    await ctx.registry.put(record);
    await retireReplaced(ctx, old, record);
    return record;
  } catch (err) {
    await rm(stage, { recursive: true, force: true });
    throw err;
  }
}
