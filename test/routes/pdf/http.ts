/** HTTP helpers for the PDF route tests: the three input forms, answers, reasons, jobs. */
import assert from 'node:assert/strict';
import { unzipSync } from 'fflate';
import { type InProcess, json } from '../../support/server.ts';
import { assertQpdfCheck } from '../../services/pdf/helpers.ts';

export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

export type Req = Pick<InProcess, 'request'>;

/** multipart/form-data: every document in the field `file` (in order), options as further fields. */
export function multipart(
  files: { bytes: Uint8Array; name?: string; field?: string }[],
  fields: Record<string, string | string[]> = {},
  headers: Record<string, string> = {},
): RequestInit {
  const fd = new FormData();
  for (const f of files) fd.append(f.field ?? 'file', new Blob([f.bytes as Uint8Array<ArrayBuffer>]), f.name ?? 'doc.pdf');
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) fd.append(k, x);
  return { method: 'POST', body: fd, headers };
}

/** JSON with the document in base64 (input_format Base64EncodedFile). */
export const base64Json = (bytes: Uint8Array, options: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  json({ input_format: 'Base64EncodedFile', file: b64(bytes), filename: 'doc.pdf', ...options }, headers);

/** JSON naming uploaded files (input_format FileIdentifier). */
export const fileIdJson = (fileId: string | string[], options: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  json({ input_format: 'FileIdentifier', ...(Array.isArray(fileId) ? { file_ids: fileId } : { file_id: fileId }), ...options }, headers);

export async function upload(t: Req, bytes: Uint8Array, name = 'doc.pdf'): Promise<string> {
  const r = await t.request('/svc/v1/files/upload', multipart([{ bytes, name }]));
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).fileId;
}

export async function fileContent(t: Req, fileId: string): Promise<{ bytes: Uint8Array; contentType: string | null }> {
  const r = await t.request(`/svc/v1/files/${fileId}/content`);
  assert.equal(r.status, 200);
  return { bytes: new Uint8Array(await r.arrayBuffer()), contentType: r.headers.get('content-type') };
}

/** A 200 carrying a PDF; qpdf --check must pass on it. */
export async function pdfOf(r: Response): Promise<Uint8Array> {
  const ct = r.headers.get('content-type');
  if (r.status !== 200 || ct !== 'application/pdf') assert.fail(`expected 200 application/pdf, got ${r.status} ${ct}: ${await r.text()}`);
  const bytes = new Uint8Array(await r.arrayBuffer());
  assertQpdfCheck(bytes);
  return bytes;
}

export async function jsonOf(r: Response): Promise<any> {
  const text = await r.text();
  assert.equal(r.status, 200, text);
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  return JSON.parse(text);
}

export async function zipOf(r: Response): Promise<Record<string, Uint8Array>> {
  if (r.status !== 200) assert.fail(`expected 200, got ${r.status}: ${await r.text()}`);
  assert.equal(r.headers.get('content-type'), 'application/zip');
  return unzipSync(new Uint8Array(await r.arrayBuffer()));
}

/** The native error answer: status, reason in `error`, a message. */
export async function expectReason(r: Response, status: number, reason: string): Promise<any> {
  const text = await r.text();
  assert.equal(r.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error, reason, text);
  assert.equal(typeof body.message, 'string');
  return body;
}

export async function poll(t: Req, jobId: string): Promise<{ rec: any; text: string }> {
  for (let i = 0; i < 400; i++) {
    const r = await t.request(`/svc/v1/jobs/${jobId}`);
    const text = await r.text();
    assert.equal(r.status, 200, text);
    const rec = JSON.parse(text);
    if (rec.status !== 'processing') return { rec, text };
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error(`job ${jobId} did not finish`);
}

/** Submits with Prefer: respond-async (the init's headers kept) and polls to the end. */
export async function asJob(t: Req, path: string, init: RequestInit): Promise<any> {
  const headers = new Headers(init.headers);
  headers.set('prefer', 'respond-async');
  const r = await t.request(path, { ...init, headers });
  const text = await r.text();
  assert.equal(r.status, 202, text);
  const { job_id } = JSON.parse(text);
  assert.equal(r.headers.get('location'), `/svc/v1/jobs/${job_id}`);
  return (await poll(t, job_id)).rec;
}

/** The same failure inline and as a job: same status and reason (the job contract: a task fails alike either way). */
export async function expectReasonBoth(t: Req, path: string, init: () => RequestInit, status: number, reason: string): Promise<void> {
  await expectReason(await t.request(path, init()), status, reason);
  const rec = await asJob(t, path, init());
  assert.equal(rec.status, 'failed', JSON.stringify(rec));
  assert.equal(rec.error_code, status, JSON.stringify(rec));
  assert.equal(rec.error_reason, reason, JSON.stringify(rec));
}
