/** Dialect A files: POST /v1/files (multipart file + purpose), GET /v1/files[/{id}[/content]], DELETE. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { fileContent } from '../../http/file-content.ts';
import { isMultipart, readMultipart } from '../../http/multipart.ts';
import { invalidRequest } from '../../http/validate.ts';
import type { FileStore, StoredFile } from '../../services/files/file-store.ts';

const secs = (ms: number) => Math.floor(Number(ms) / 1000);

export const openaiFile = (f: StoredFile) => ({
  id: f.id, object: 'file', bytes: Number(f.bytes), created_at: secs(f.created_at), expires_at: secs(f.expires_at),
  filename: f.filename, purpose: f.purpose, status: 'processed', status_details: null,
});

export function openaiFileRoutes(files: FileStore) {
  const app = new Hono<AppEnv>();
  app.post('/files', async (c) => {
    if (!isMultipart(c)) throw invalidRequest('send multipart/form-data with the fields file and purpose', [{ field: 'file', message: 'required' }]);
    const mp = await readMultipart(c, files, 'user_data');
    const part = mp.files.find((f) => f.field === 'file');
    const purpose = mp.fields.get('purpose')?.[0];
    const owner = c.get('owner').id;
    if (!part || !purpose) {
      await Promise.all(mp.files.map((f) => files.delete(owner, f.file.id).catch(() => {})));
      throw invalidRequest(!part ? "missing required field 'file'" : "missing required field 'purpose'", [{ field: !part ? 'file' : 'purpose', message: 'required' }]);
    }
    const saved = await files.setPurpose(owner, part.file.id, purpose);
    return c.json(openaiFile(saved));
  });
  app.get('/files', async (c) => c.json({ object: 'list', data: (await files.list(c.get('owner').id)).map(openaiFile), has_more: false }));
  app.get('/files/:id', async (c) => c.json(openaiFile(await files.get(c.get('owner').id, c.req.param('id')))));
  app.get('/files/:id/content', (c) => fileContent(c, files));
  app.delete('/files/:id', async (c) => {
    await files.delete(c.get('owner').id, c.req.param('id'));
    return c.json({ id: c.req.param('id'), object: 'file', deleted: true });
  });
  return app;
}
