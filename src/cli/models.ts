/** `svc pull | list | ps | show | rm | cp | stop`: model management against a running server. */
import { type Progress, ProgressView } from './progress.ts';
import { humanAge, humanBytes, table } from './output.ts';
import type { SvcClient } from './client.ts';
import { writeOut } from '../runtime/process.ts';
import { UsageError } from './args.ts';

export interface CommandContext {
  client: SvcClient;
  json: boolean;
  words: string[];
  flags: Map<string, string>;
}

const need = (words: string[], n: number, usage: string) => {
  if (words.length < n) throw new UsageError(`usage: ${usage}`);
  return words;
};

/** Streams the pull's progress; Ctrl-C only stops watching: the download belongs to the server. */
export async function pullModel(client: SvcClient, model: string, json: boolean, insecure = false): Promise<void> {
  const view = json ? null : new ProgressView();
  for await (const p of client.ndjson<Progress>('/api/pull', { model, stream: true, ...(insecure ? { insecure } : {}) })) {
    if (json) writeOut(JSON.stringify(p) + '\n');
    else view!.update(p);
  }
}

export async function pull(ctx: CommandContext): Promise<number> {
  const [model] = need(ctx.words, 1, 'svc pull <model>');
  await pullModel(ctx.client, model!, ctx.json, ctx.flags.has('insecure'));
  return 0;
}

interface TagEntry {
  name: string;
  digest?: string;
  size?: number;
  modified_at?: string;
  details?: { parameter_size?: string; quantization_level?: string };
}

export async function list(ctx: CommandContext): Promise<number> {
  const { models } = await ctx.client.json<{ models: TagEntry[] }>('GET', '/api/tags');
  if (ctx.json) return print({ models });
  const rows = models.map((
    m,
  ) => [
    m.name,
    (m.digest ?? '').slice(0, 12),
    m.size ? humanBytes(m.size) : '',
    m.modified_at ? humanAge(m.modified_at) : 'not downloaded',
  ]);
  writeOut(table(['NAME', 'ID', 'SIZE', 'MODIFIED'], rows));
  return 0;
}

interface PsEntry {
  name: string;
  digest?: string;
  size?: number;
  size_vram?: number;
  backend?: { device?: string; runtime?: string; dtype?: string };
}

export async function ps(ctx: CommandContext): Promise<number> {
  const { models } = await ctx.client.json<{ models: PsEntry[] }>('GET', '/api/ps');
  if (ctx.json) return print({ models });
  const rows = models.map((
    m,
  ) => [m.name, (m.digest ?? '').slice(0, 12), humanBytes(m.size ?? 0), [m.backend?.device, m.backend?.dtype].filter(Boolean).join(' ')]);
  writeOut(table(['NAME', 'ID', 'SIZE', 'PROCESSOR'], rows));
  return 0;
}

interface ShowAnswer {
  details?: Record<string, unknown>;
  capabilities?: string[];
  parameters?: string;
  system?: string;
  license?: string;
  model_info?: Record<string, unknown>;
}

export async function show(ctx: CommandContext): Promise<number> {
  const [model] = need(ctx.words, 1, 'svc show <model>');
  const s = await ctx.client.json<ShowAnswer>('POST', '/api/show', { model });
  if (ctx.json) return print(s);
  const info = s.model_info ?? {};
  const arch = String(info['general.architecture'] ?? s.details?.family ?? '');
  const rows: [string, unknown][] = [
    ['architecture', arch],
    ['parameters', s.details?.parameter_size],
    ['context length', info[`${arch}.context_length`]],
    ['embedding length', info[`${arch}.embedding_length`]],
    ['quantization', s.details?.quantization_level],
    ['format', s.details?.format],
  ];
  let out = '  Model\n' + rows.filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => `    ${k.padEnd(20)}${v}\n`).join('');
  if (s.capabilities?.length) out += '\n  Capabilities\n' + s.capabilities.map((c) => `    ${c}\n`).join('');
  if (s.parameters?.trim()) out += '\n  Parameters\n' + s.parameters.trim().split('\n').map((l) => `    ${l.trim()}\n`).join('');
  if (s.system?.trim()) out += `\n  System\n    ${s.system.trim()}\n`;
  if (s.license?.trim()) out += `\n  License\n    ${s.license.trim().split('\n')[0]}\n`;
  writeOut(out);
  return 0;
}

export async function rm(ctx: CommandContext): Promise<number> {
  need(ctx.words, 1, 'svc rm <model> [<model> …]');
  for (const model of ctx.words) {
    await ctx.client.json('DELETE', '/api/delete', { model });
    if (!ctx.json) writeOut(`deleted '${model}'\n`);
  }
  return ctx.json ? print({ status: 'success' }) : 0;
}

export async function cp(ctx: CommandContext): Promise<number> {
  const [source, destination] = need(ctx.words, 2, 'svc cp <source> <destination>');
  await ctx.client.json('POST', '/api/copy', { source, destination });
  return ctx.json ? print({ status: 'success' }) : (writeOut(`copied '${source}' to '${destination}'\n`), 0);
}

/** Unloads a model now (Ollama's `stop`: a preload request with keep_alive 0). */
export async function stop(ctx: CommandContext): Promise<number> {
  const [model] = need(ctx.words, 1, 'svc stop <model>');
  await ctx.client.json('POST', '/api/generate', { model, prompt: '', keep_alive: 0, stream: false });
  return ctx.json ? print({ status: 'success' }) : 0;
}

export function print(value: unknown): number {
  writeOut(JSON.stringify(value, null, 2) + '\n');
  return 0;
}
