/** POST /svc/v1/pdf-merge, /pdf-split, /pdf-edit: documents put together, taken apart, rearranged. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { invalidRequest } from '../../../http/validate.ts';
import { type EditOperation, numberedNames, type SplitOptions } from '../../../services/pdf/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import { baseName, deliverMany, deliverPdf, outName, type PdfRouteDeps, pdfTask } from './pdf-task.ts';
import { delivery, pages, password, text } from '../task-options.ts';

const PDF = 'application/pdf';
/** A list of page selections, one per input (merge) or per output (split); a lone string is a list of one. */
const selections = v.union([v.array(v.nullable(pages)), v.pipe(v.string(), v.transform((s) => [s]))]);

const Merge = v.object({
  ranges: v.optional(selections),
  passwords: v.optional(v.array(v.nullable(text))),
  password,
  bookmarks: v.optional(v.boolean(), true),
  delivery,
});

const Split = v.object({
  ranges: v.optional(selections),
  every: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  single: v.optional(v.boolean()),
  password,
  delivery,
});

const num = v.number();
const box = v.object({ x: num, y: num, width: num, height: num });
const Operation = v.variant('op', [
  v.object({ op: v.literal('rotate'), pages: v.optional(pages), degrees: v.pipe(num, v.integer()) }),
  v.object({ op: v.literal('delete'), pages }),
  v.object({ op: v.literal('reorder'), order: v.array(v.pipe(num, v.integer())) }),
  v.object({
    op: v.literal('insert_blank'),
    after: v.pipe(num, v.integer()),
    count: v.optional(v.pipe(num, v.integer())),
    width: v.optional(num),
    height: v.optional(num),
  }),
  v.object({ op: v.literal('crop'), pages: v.optional(pages), box }),
  v.object({
    op: v.literal('set_metadata'),
    title: v.optional(text),
    author: v.optional(text),
    subject: v.optional(text),
    keywords: v.optional(v.union([text, v.array(text)])),
    creator: v.optional(text),
    producer: v.optional(text),
  }),
]);
const Edit = v.object({
  operations: v.pipe(
    v.union([v.array(Operation), v.pipe(Operation, v.transform((o) => [o]))]),
    v.minLength(1, 'give at least one operation'),
  ),
  password,
  drop_signatures: v.optional(v.boolean()),
  delivery,
});

export function pdfAssembleRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post(
    '/pdf-merge',
    pdfTask(deps, {
      name: 'pdf-merge',
      options: Merge,
      files: { min: 1, max: 100 },
      async run(docs, o, ctx, input) {
        for (const [field, list] of [['ranges', o.ranges], ['passwords', o.passwords]] as const) {
          if (list && list.length !== docs.length) {
            throw invalidRequest(`${field}: one entry per input document (${docs.length}), null for the default`, [{
              field,
              message: 'length differs from the number of documents',
            }]);
          }
        }
        const pdf = await workers.run('pdf.merge', [
          docs.map((bytes, i) => ({ bytes, pages: o.ranges?.[i] ?? undefined, password: o.passwords?.[i] ?? o.password })),
          { bookmarks: o.bookmarks },
        ], ctx);
        ctx.progress(docs.length, docs.length);
        return deliverPdf(ctx, o.delivery, input, 'merged', pdf);
      },
    }),
  );
  app.post(
    '/pdf-split',
    pdfTask(deps, {
      name: 'pdf-split',
      options: Split,
      async run([doc], o, ctx, input) {
        if ([o.ranges, o.every, o.single].filter((x) => x !== undefined).length > 1) {
          throw invalidRequest('give one of ranges, every or single', [{
            field: 'ranges',
            message: 'ranges, every and single exclude each other',
          }]);
        }
        const how = (o.ranges
          ? { ranges: o.ranges.map((r) => r ?? 'all') }
          : o.every
          ? { every: o.every }
          : { single: true }) as SplitOptions;
        const parts = await workers.run('pdf.split', [doc!, { ...how, password: o.password }], ctx);
        ctx.progress(parts.length, parts.length);
        const names = numberedNames(parts.length, `${baseName(input.files[0])}-part`, 'pdf');
        return deliverMany(
          ctx,
          o.delivery,
          parts.map((bytes, i) => ({ bytes, filename: names[i]!, contentType: PDF })),
          outName(input.files[0], 'split', 'zip'),
        );
      },
    }),
  );
  app.post(
    '/pdf-edit',
    pdfTask(deps, {
      name: 'pdf-edit',
      options: Edit,
      async run([doc], o, ctx, input) {
        const pdf = await workers.run('pdf.edit', [doc!, o.operations as EditOperation[], {
          password: o.password,
          dropSignatures: o.drop_signatures,
        }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'edited', pdf);
      },
    }),
  );
  return app;
}
