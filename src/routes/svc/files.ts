/** POST /svc/v1/files/upload (multipart `file`, streamed to disk) → { fileId }; metadata, content, delete. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { fileContent } from '../../http/file-content.ts';
import { isMultipart, readMultipart } from '../../http/multipart.ts';
import { invalidRequest } from '../../http/validate.ts';
import type { FileStore, StoredFile } from '../../services/files/file-store.ts';

export const fileView = (f: StoredFile) => ({
  fileId: f.id,
  filename: f.filename,
  bytes: Number(f.bytes),
  content_type: f.content_type,
  purpose: f.purpose,
  created_at: new Date(Number(f.created_at)).toISOString(),
  expires_at: new Date(Number(f.expires_at)).toISOString(),
});

export function fileRoutes(files: FileStore) {
  const app = new Hono<AppEnv>();
  app.post('/files/upload', async (c) => {
    if (!isMultipart(c)) {
      throw invalidRequest('send the file as multipart/form-data in the field "file"', [{ field: 'file', message: 'required' }]);
    }
    const mp = await readMultipart(c, files, 'upload');
    const [first, ...rest] = mp.files;
    if (!first) {
      throw invalidRequest('no file part in the request: send the file in the field "file"', [{ field: 'file', message: 'required' }]);
    }
    return c.json({ ...fileView(first.file), files: rest.length ? mp.files.map((f) => fileView(f.file)) : undefined });
  });
  app.get('/files/:id', async (c) => c.json(fileView(await files.get(c.get('owner').id, c.req.param('id')))));
  app.get('/files/:id/content', (c) => fileContent(c, files));
  app.delete('/files/:id', async (c) => {
    await files.delete(c.get('owner').id, c.req.param('id'));
    return c.json({ fileId: c.req.param('id'), deleted: true });
  });
  return app;
}
