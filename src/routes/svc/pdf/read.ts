/** POST /svc/v1/pdf-info, /pdf-layout, /pdf-search: JSON answers about a document. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { workers } from '../../../services/workers/index.ts';
import { type PdfRouteDeps, pdfTask, snakeKeys } from './pdf-task.ts';
import { pages, password, text } from '../task-options.ts';

const Info = v.object({ password });
const Layout = v.object({ pages: v.optional(pages), password });
const Search = v.object({
  query: v.pipe(text, v.minLength(1, 'give a non-empty query')),
  regex: v.optional(v.boolean(), false),
  case_sensitive: v.optional(v.boolean(), false),
  pages: v.optional(pages),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000))),
  password,
});

export function pdfReadRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post(
    '/pdf-info',
    pdfTask(deps, {
      name: 'pdf-info',
      options: Info,
      async run([doc], o, ctx) {
        const info = await workers.run('pdf.info', [doc!, { password: o.password }], ctx);
        ctx.progress(info.pageCount, info.pageCount);
        return snakeKeys(info);
      },
    }),
  );
  app.post(
    '/pdf-layout',
    pdfTask(deps, {
      name: 'pdf-layout',
      options: Layout,
      async run([doc], o, ctx) {
        const layout = await workers.run('pdf.layout', [doc!, { pages: o.pages, password: o.password }], ctx);
        ctx.progress(layout.pages.length, layout.pages.length);
        return snakeKeys(layout);
      },
    }),
  );
  app.post(
    '/pdf-search',
    pdfTask(deps, {
      name: 'pdf-search',
      options: Search,
      run: async ([doc], o, ctx) =>
        snakeKeys(
          await workers.run('pdf.search', [doc!, {
            query: o.query,
            regex: o.regex,
            caseSensitive: o.case_sensitive,
            pages: o.pages,
            limit: o.limit,
            password: o.password,
          }], ctx),
        ),
    }),
  );
  return app;
}
