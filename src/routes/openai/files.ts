/** Dialect A files: POST /v1/files (multipart file + purpose), GET /v1/files[/{id}[/content]], DELETE. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { fileContent } from '../../http/file-content.ts';
import { isMultipart, readMultipart } from '../../http/multipart.ts';
import * as v from 'valibot';
import { invalidRequest, validate } from '../../http/validate.ts';
import type { FileStore, StoredFile } from '../../services/files/file-store.ts';

const secs = (ms: number) => Math.floor(Number(ms) / 1000);

export const openaiFile = (f: StoredFile) => ({
  id: f.id,
  object: 'file',
  bytes: Number(f.bytes),
  created_at: secs(f.created_at),
  expires_at: secs(f.expires_at),
  filename: f.filename,
  purpose: f.purpose,
  status: 'processed',
  status_details: null,
});

const ListQuery = v.object({
  purpose: v.optional(v.string()),
  limit: v.optional(v.pipe(v.string(), v.toNumber(), v.integer(), v.minValue(1), v.maxValue(10_000)), '10000'),
  order: v.optional(v.picklist(['asc', 'desc']), 'desc'),
  after: v.optional(v.string()),
});

/** One page of the key's files (newest first by default), as OpenAI's list: purpose filter, order, after, limit. */
function page(all: StoredFile[], q: v.InferOutput<typeof ListQuery>) {
  let rows = q.purpose ? all.filter((f) => f.purpose === q.purpose) : all;
  if (q.order === 'asc') rows = [...rows].reverse();
  if (q.after) rows = rows.slice(rows.findIndex((f) => f.id === q.after) + 1);
  const data = rows.slice(0, q.limit).map(openaiFile);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > q.limit };
}

export function openaiFileRoutes(files: FileStore) {
  const app = new Hono<AppEnv>();
  app.post('/files', async (c) => {
    if (!isMultipart(c)) {
      throw invalidRequest('send multipart/form-data with the fields file and purpose', [{ field: 'file', message: 'required' }]);
    }
    const mp = await readMultipart(c, files, 'user_data');
    const part = mp.files.find((f) => f.field === 'file');
    const purpose = mp.fields.get('purpose')?.[0];
    const owner = c.get('owner').id;
    if (!part || !purpose) {
      await Promise.all(mp.files.map((f) => files.delete(owner, f.file.id).catch(() => {})));
      throw invalidRequest(!part ? "missing required field 'file'" : "missing required field 'purpose'", [{
        field: !part ? 'file' : 'purpose',
        message: 'required',
      }]);
    }
    const saved = await files.setPurpose(owner, part.file.id, purpose);
    return c.json(openaiFile(saved));
  });
  app.get('/files', async (c) => c.json(page(await files.list(c.get('owner').id), validate(ListQuery, c.req.query()))));
  app.get('/files/:id', async (c) => c.json(openaiFile(await files.get(c.get('owner').id, c.req.param('id')))));
  app.get('/files/:id/content', (c) => fileContent(c, files));
  app.delete('/files/:id', async (c) => {
    await files.delete(c.get('owner').id, c.req.param('id'));
    return c.json({ id: c.req.param('id'), object: 'file', deleted: true });
  });
  return app;
}
