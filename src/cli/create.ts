/**
 * `svc create <name> -f <Modelfile> [-q q8|q4]`: pushes local weight and adapter files as blobs (hashed
 * here, skipped when the server has them), then streams `/api/create`'s progress.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { writeErr, writeOut } from '../runtime/process.ts';
import { UsageError } from './args.ts';
import { ServerError, type SvcClient } from './client.ts';
import { parseModelfile } from './modelfile.ts';
import type { CommandContext } from './models.ts';
import { type Progress, ProgressView } from './progress.ts';

/** Pushes one file as a blob unless the server already holds it; returns its digest. */
async function pushBlob(client: SvcClient, path: string): Promise<string> {
  const bytes = readFileSync(path);
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  try {
    await client.fetch(`/api/blobs/${digest}`, { method: 'HEAD' });
    return digest;
  } catch (e) {
    if (!(e instanceof ServerError) || e.status !== 404) throw e;
  }
  await client.fetch(`/api/blobs/${digest}`, { method: 'POST', body: bytes as Uint8Array<ArrayBuffer> });
  return digest;
}

/** A local path's files, as `files`/`adapters` maps of name → digest (a directory gives all its files). */
async function pushPath(client: SvcClient, path: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const names = statSync(path).isDirectory()
    ? readdirSync(path, { recursive: true }).map(String).filter((n) => statSync(join(path, n)).isFile())
    : [basename(path)];
  const root = statSync(path).isDirectory() ? path : dirname(path);
  for (const name of names) {
    writeErr(`pushing ${name}\n`);
    out[name.split('\\').join('/')] = await pushBlob(client, join(root, name));
  }
  return out;
}

export async function create(ctx: CommandContext): Promise<number> {
  const [name] = ctx.words;
  const file = ctx.flags.get('file') ?? 'Modelfile';
  if (!name) throw new UsageError('usage: svc create <name> -f <Modelfile> [-q q8|q4]');
  if (!existsSync(file)) throw new UsageError(`no Modelfile at ${file} (name one with -f)`);
  const mf = parseModelfile(readFileSync(file, 'utf8'));
  const here = dirname(resolve(file));
  const local = (p: string) => /^(\.{0,2}\/|~\/)/.test(p) || existsSync(resolve(here, p));
  const body: Record<string, unknown> = { model: name, stream: true };
  if (local(mf.from!)) body.files = await pushPath(ctx.client, resolve(here, mf.from!));
  else body.from = mf.from;
  if (mf.adapters.length) {
    body.adapters = {};
    for (const a of mf.adapters) Object.assign(body.adapters as object, await pushPath(ctx.client, resolve(here, a)));
  }
  if (mf.system !== undefined) body.system = mf.system;
  if (mf.template !== undefined) body.template = mf.template;
  if (mf.license) body.license = mf.license.length === 1 ? mf.license[0] : mf.license;
  if (Object.keys(mf.parameters).length) body.parameters = mf.parameters;
  if (mf.messages.length) throw new UsageError('Modelfile: MESSAGE is not supported by /api/create on this server');
  if (ctx.flags.has('quantize')) body.quantize = ctx.flags.get('quantize');
  const view = ctx.json ? null : new ProgressView();
  for await (const p of ctx.client.ndjson<Progress>('/api/create', body)) {
    if (ctx.json) writeOut(JSON.stringify(p) + '\n');
    else view!.update(p);
  }
  return 0;
}
