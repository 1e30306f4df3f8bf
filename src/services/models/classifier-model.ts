/**
 * Classifier models: a trained head stored as a custom model. Its directory holds one file,
 * `classifier.json` (the head's weights, its labels, the metrics of its held-out split, and the name of the
 * embedding model it was trained on); the record has kind `classifier` and names that embedding model as
 * its parent. It is listed, shown, copied and deleted like any custom model (copy links the file).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidArgument, ServiceError } from '../errors.ts';
import { installCustom, newCustomRepo } from './custom-store.ts';
import { destinationName, type ModelAdminContext, modelInUse, type NameLocks, newAssemblyDir, retireReplaced } from './manage.ts';
import { readLocalCopy } from './manifest.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import type { CustomModelRecord } from './spec.ts';

export const CLASSIFIER_FILE = 'classifier.json';

export interface ClassifierFile {
  format: 'svc-classifier';
  version: 1;
  embedding_model: string;
  labels: string[];
  head: unknown;
  metrics?: unknown;
  trained_at: string;
}

/** Writes a new classifier model `name` (replacing an older custom model of that name). */
export async function installClassifier(
  ctx: ModelAdminContext,
  locks: NameLocks,
  rawName: string,
  file: ClassifierFile,
): Promise<CustomModelRecord> {
  const name = destinationName(ctx.catalog, rawName, 'name');
  return locks.run(name, async () => {
    if (ctx.usage.isServing(name)) throw modelInUse(name);
    await ctx.layout.assertWritable();
    const old = await ctx.registry.get(name);
    const bytes = new TextEncoder().encode(JSON.stringify(file));
    const repo = newCustomRepo(name);
    const stage = newAssemblyDir(ctx.layout);
    try {
      await mkdir(stage, { recursive: true });
      await writeFile(join(stage, CLASSIFIER_FILE), bytes);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      await installCustom(ctx.layout, repo, stage, 'fp32', [{ path: CLASSIFIER_FILE, size: bytes.length, sha256 }]);
    } catch (err) {
      await rm(stage, { recursive: true, force: true });
      throw err;
    }
    const record: CustomModelRecord = {
      name,
      repo,
      dtype: 'fp32',
      kind: 'classifier',
      capabilities: [],
      components: [],
      details: { family: 'classifier' },
      source: 'create',
      unverified: true,
      created_at: new Date().toISOString(),
      profile: { parent: file.embedding_model },
    };
    await ctx.registry.put(record);
    await retireReplaced(ctx, old, record);
    return record;
  });
}

/** The stored classifier of model `name`: 404 unknown, 400 when it is not a classifier. */
export async function readClassifier(ctx: ModelAdminContext, name: string): Promise<{ name: string; file: ClassifierFile }> {
  const r = await resolveModel(name, ctx.catalog, ctx.registry);
  if (r.source === 'hub') throw modelNotFound(name);
  if (r.spec.kind !== 'classifier') {
    throw invalidArgument(`model '${r.spec.name}' is not a classifier (kind ${r.spec.kind})`, [{
      field: 'model',
      message: 'not a classifier',
    }]);
  }
  const local = await readLocalCopy(ctx.layout, r.spec.repo, r.spec.dtype);
  if (!local) throw modelNotFound(name);
  let file: ClassifierFile;
  try {
    file = JSON.parse(await readFile(join(local.dir, CLASSIFIER_FILE), 'utf8'));
  } catch (err) {
    throw new ServiceError(500, 'model_corrupt', `classifier '${r.spec.name}' cannot be read: ${(err as Error).message}`);
  }
  if (file?.format !== 'svc-classifier' || !Array.isArray(file.labels) || typeof file.embedding_model !== 'string') {
    throw new ServiceError(500, 'model_corrupt', `classifier '${r.spec.name}' has an unknown file format`);
  }
  return { name: r.spec.name, file };
}
