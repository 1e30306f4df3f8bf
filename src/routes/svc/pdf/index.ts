/** The PDF toolkit's task routes (docs/api/pdf.md), each a thin shell over src/services/pdf/. */
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/context.ts';
import { pdfArchiveRoutes } from './archive.ts';
import { pdfAssembleRoutes } from './assemble.ts';
import type { PdfRouteDeps } from './pdf-task.ts';
import { pdfReadRoutes } from './read.ts';
import { pdfRenderRoutes } from './render.ts';
import { pdfSecureRoutes } from './secure.ts';
import { pdfWatermarkRoutes } from './watermark.ts';

export function pdfRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  for (const routes of [pdfReadRoutes, pdfAssembleRoutes, pdfSecureRoutes, pdfRenderRoutes, pdfWatermarkRoutes, pdfArchiveRoutes]) {
    app.route('/', routes(deps));
  }
  return app;
}
