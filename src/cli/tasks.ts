/**
 * Task shortcuts for the native family: `svc ocr`, `svc md`, `svc pdf <operation>`, `svc transcribe`.
 * Each submits with `Prefer: respond-async` (the job contract), shows the job's progress while it runs,
 * then prints the result or writes the output file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { stderrIsTTY, stdoutIsTTY, writeErr, writeOut } from '../runtime/process.ts';
import { UsageError } from './args.ts';
import { errorOf, type SvcClient } from './client.ts';
import { type CommandContext, print } from './models.ts';
import type { JobView } from '../services/jobs/job-records.ts';

interface FileResult {
  object: 'file';
  file_id: string;
  filename?: string;
  content_type?: string;
  content_url: string;
}

export type TaskOutput = { json: unknown } | { bytes: Uint8Array; contentType: string; filename?: string };

/** Options given as `--name value` become form fields; these flags are the command's own. */
const OWN = new Set(['json', 'output', 'host', 'port', 'data-dir', 'no-start', 'model', 'api-key']);

function form(files: string[], flags: Map<string, string>, fileField = 'file'): FormData {
  const fd = new FormData();
  for (const path of files) {
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(path);
    } catch (e) {
      throw new UsageError(`cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    fd.append(fileField, new Blob([bytes as Uint8Array<ArrayBuffer>]), basename(path));
  }
  for (const [k, v] of flags) if (!OWN.has(k)) fd.append(k.replace(/-/g, '_'), v);
  return fd;
}

/** Submits a task as a job and waits for it, drawing `name 3/10` on a terminal. */
export async function runTask(client: SvcClient, name: string, body: FormData): Promise<TaskOutput> {
  const res = await client.fetch(`/svc/v1/${name}`, { method: 'POST', body, headers: { Prefer: 'respond-async' } });
  if (res.status !== 202) return output(res);
  const { job_id } = (await res.json()) as { job_id: string };
  const tty = stderrIsTTY();
  let delay = 50;
  for (;;) {
    const job = await client.json<JobView>('GET', `/svc/v1/jobs/${job_id}`);
    if (job.status !== 'processing') {
      if (tty) writeErr('\r\x1b[2K');
      if (job.status === 'completed') return fetchResult(client, job.result);
      throw errorOf(
        job.error_code ?? 500,
        JSON.stringify({ error: job.error_reason ?? job.status, message: job.error ?? `the job ended ${job.status}` }),
      );
    }
    if (tty && job.progress_total) writeErr(`\r\x1b[2K${name} ${job.progress_current ?? 0}/${job.progress_total}`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(1000, delay * 2);
  }
}

async function output(res: Response): Promise<TaskOutput> {
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('application/json')) return { json: await res.json() };
  const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1];
  return { bytes: new Uint8Array(await res.arrayBuffer()), contentType: type, filename };
}

async function fetchResult(client: SvcClient, result: unknown): Promise<TaskOutput> {
  const f = result as FileResult;
  if (f && typeof f === 'object' && f.object === 'file' && typeof f.content_url === 'string') {
    const out = await output(await client.fetch(f.content_url));
    return 'bytes' in out ? { ...out, filename: f.filename ?? out.filename } : out;
  }
  return { json: result };
}

/** Writes a binary output to `-o`, or to stdout when it is not a terminal; prints JSON. */
function deliver(out: TaskOutput, ctx: CommandContext, text?: (j: Record<string, unknown>) => string | undefined): number {
  const target = ctx.flags.get('output');
  if ('json' in out) {
    const t = !ctx.json && text ? text(out.json as Record<string, unknown>) : undefined;
    if (target) writeFileSync(target, t ?? JSON.stringify(out.json, null, 2) + '\n');
    else if (t !== undefined) writeOut(t.endsWith('\n') ? t : t + '\n');
    else print(out.json);
    return 0;
  }
  if (target) {
    writeFileSync(target, out.bytes);
    if (!ctx.json) writeErr(`wrote ${target} (${out.bytes.length} bytes)\n`);
    return 0;
  }
  if (out.contentType.startsWith('text/')) {
    writeOut(out.bytes);
    return 0;
  }
  if (stdoutIsTTY()) {
    throw new UsageError(`the result is a file (${out.filename ?? out.contentType}): name it with -o <path>, or redirect stdout`);
  }
  writeOut(out.bytes);
  return 0;
}

export async function ocr(ctx: CommandContext): Promise<number> {
  if (ctx.words.length !== 1) throw new UsageError('usage: svc ocr <file> [-o out.txt] [--engine tesseract|paddle] [--language eng]');
  return deliver(await runTask(ctx.client, 'ocr', form(ctx.words, ctx.flags)), ctx, (j) => String(j.text ?? ''));
}

export async function md(ctx: CommandContext): Promise<number> {
  if (ctx.words.length !== 1) throw new UsageError('usage: svc md <document> [-o out.md]');
  return deliver(await runTask(ctx.client, 'document-to-markdown', form(ctx.words, ctx.flags)), ctx, (j) => String(j.markdown ?? ''));
}

/** `svc pdf <operation> <files…> [--option value …] [-o out]`: any `/svc/v1/pdf-<operation>` task. */
export async function pdf(ctx: CommandContext): Promise<number> {
  const [op, ...files] = ctx.words;
  if (!op || !/^[a-z][a-z-]*$/.test(op) || files.length === 0) {
    throw new UsageError(
      'usage: svc pdf <info|merge|split|edit|unlock|redact|to-images|search|watermark|…> <file.pdf> [more.pdf …] [--option value …] [-o out]',
    );
  }
  return deliver(await runTask(ctx.client, `pdf-${op}`, form(files, ctx.flags)), ctx);
}

/** `svc transcribe <audio>`: the OpenAI-dialect transcription route, plain text by default. */
export async function transcribe(ctx: CommandContext): Promise<number> {
  if (ctx.words.length !== 1) {
    throw new UsageError(
      'usage: svc transcribe <audio-or-video> [--model whisper:tiny] [--language en] [--response-format text|srt|vtt|json] [-o out]',
    );
  }
  const fd = form(ctx.words, new Map());
  fd.append('model', ctx.flags.get('model') ?? 'whisper:tiny');
  const format = ctx.flags.get('response-format') ?? (ctx.json ? 'verbose_json' : 'text');
  fd.append('response_format', format);
  for (const k of ['language', 'prompt', 'temperature']) if (ctx.flags.has(k)) fd.append(k, ctx.flags.get(k)!);
  const res = await ctx.client.fetch('/v1/audio/transcriptions', { method: 'POST', body: fd });
  return deliver(await output(res), ctx, (j) => (typeof j.text === 'string' && !ctx.json ? j.text : undefined));
}
