/**
 * Runs a native tool by sending its request to the route that serves it, with the caller's own
 * credentials: in-process through the app (MCP over HTTP, server tools) or over the network to a running
 * server (`svc mcp` on stdio). Task routes run as jobs (`Prefer: respond-async`) so that their progress
 * can be reported while the tool runs; a binary result arrives as a file of the caller.
 */
import type { NativeTool } from './native-tools.ts';
import type { JobView } from '../jobs/job-records.ts';

/** Sends one request (app.request in-process, or fetch against a server). */
export type Dispatch = (path: string, init: RequestInit) => Promise<Response>;

export interface ToolCallOptions {
  /** Authorization / x-api-key of the caller, forwarded as they came. */
  headers: Record<string, string>;
  onProgress?: (current: number, total: number | undefined) => void | Promise<void>;
  signal?: AbortSignal;
  /** How often a running job is polled. */
  pollMs?: number;
}

export type ToolOutcome =
  | { ok: true; result: unknown }
  | { ok: false; status: number; reason: string; message: string };

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

async function failure(res: Response): Promise<ToolOutcome> {
  const text = await res.text();
  try {
    const b = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const err = b.error;
    // native problem details carry error/message; dialect A nests {message, code}
    if (err && typeof err === 'object') {
      const e = err as { message?: string; code?: string; type?: string };
      return { ok: false, status: res.status, reason: e.code ?? e.type ?? 'error', message: e.message ?? text };
    }
    return {
      ok: false,
      status: res.status,
      reason: typeof err === 'string' ? err : 'error',
      message: String(b.message ?? b.detail ?? text),
    };
  } catch {
    return { ok: false, status: res.status, reason: 'error', message: text || res.statusText };
  }
}

/** The job's outcome, polling until it leaves `processing`; progress forwarded; abort cancels the job. */
async function awaitJob(dispatch: Dispatch, jobId: string, o: ToolCallOptions): Promise<ToolOutcome> {
  const path = `/svc/v1/jobs/${encodeURIComponent(jobId)}`;
  let last = '';
  for (;;) {
    if (o.signal?.aborted) {
      await dispatch(path, { method: 'DELETE', headers: o.headers }).catch(() => {});
      return { ok: false, status: 499, reason: 'cancelled', message: 'the tool call was cancelled' };
    }
    const res = await dispatch(path, { method: 'GET', headers: o.headers });
    if (!res.ok) return failure(res);
    const job = await res.json() as JobView;
    const mark = `${job.progress_current}/${job.progress_total}`;
    if (job.progress_current != null && mark !== last) {
      last = mark;
      await o.onProgress?.(job.progress_current, job.progress_total ?? undefined);
    }
    if (job.status === 'completed') return { ok: true, result: job.result };
    if (job.status !== 'processing') {
      return {
        ok: false,
        status: job.error_code ?? 500,
        reason: job.error_reason ?? job.status,
        message: job.error ?? `the job ended ${job.status}`,
      };
    }
    await sleep(o.pollMs ?? 100, o.signal);
  }
}

export async function callNativeTool(
  dispatch: Dispatch,
  tool: NativeTool,
  args: Record<string, unknown>,
  o: ToolCallOptions,
): Promise<ToolOutcome> {
  const headers: Record<string, string> = { ...o.headers, 'content-type': 'application/json' };
  if (tool.task) headers.prefer = 'respond-async';
  const path = tool.pathOf?.(args) ?? tool.path;
  const res = await dispatch(path, { method: 'POST', headers, body: JSON.stringify(tool.body(args)), signal: o.signal });
  if (res.status === 202) {
    const { job_id } = await res.json() as { job_id: string };
    return awaitJob(dispatch, job_id, o);
  }
  if (!res.ok) return failure(res);
  const type = res.headers.get('content-type') ?? '';
  if (!type.includes('json')) return { ok: false, status: 500, reason: 'unexpected_answer', message: `${path} answered ${type}` };
  const body = await res.json();
  if (tool.name === 'chat') {
    const c = (body as { choices?: { message?: { content?: string | null } }[]; model?: string; usage?: unknown }).choices?.[0];
    return {
      ok: true,
      result: { content: c?.message?.content ?? '', model: (body as { model?: string }).model, usage: (body as { usage?: unknown }).usage },
    };
  }
  return { ok: true, result: body };
}
