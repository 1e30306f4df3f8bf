/**
 * A downloaded model's files in the hub's layout, for transformers.js in the browser (docs/admin-console.md):
 *   GET /svc/v1/model-files/<name>                                { name, repo, dtype, kind, revision, files }
 *   GET /svc/v1/model-files/<owner>/<repo>/resolve/<revision>/<path>  the bytes of a file of a downloaded repository
 * The revision segment is accepted as transformers.js writes it (`main`); the local copy is what is served.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { modelFileList, modelRepoFile } from '../../services/models/model-files.ts';
import { fileStream } from '../../services/files/file-stream.ts';

const PREFIX = '/model-files/';

export function modelFileRoutes(models: ModelServices) {
  const app = new Hono<AppEnv>();
  app.get(`${PREFIX}*`, async (c) => {
    // mounted under /svc/v1: the part after /model-files/ is the model (and the file)
    const path = c.req.path;
    const rest = decodeURIComponent(path.slice(path.indexOf(PREFIX) + PREFIX.length));
    const m = /^(.+?)\/resolve\/[^/]+\/(.+)$/.exec(rest);
    if (!m) {
      const { dir: _dir, ...list } = await modelFileList(models, rest);
      return c.json(list);
    }
    const f = await modelRepoFile(models, m[1], m[2]);
    return c.body(fileStream(f.path), 200, {
      'Content-Type': f.path.endsWith('.json') ? 'application/json' : 'application/octet-stream',
      'Content-Length': String(f.size),
    });
  });
  return app;
}
