/** pdfSplit: one PDF into several, by explicit ranges, every N pages, or single pages. */
import { PDFDocument, type PDFRef } from '@cantoo/pdf-lib';
import { invalidArgument } from '../errors.ts';
import { openPdf } from './open.ts';
import { readOutline, retarget, writeOutline } from './outline.ts';
import { resolvePages } from './page-ranges.ts';

export type SplitOptions =
  & { password?: string }
  & (
    /** each entry is one output, in the page-selection syntax: ["1-3", "4-", [7, 9]] */
    | { ranges: (string | number[])[]; every?: never; single?: never }
    /** chunks of N pages */
    | { every: number; ranges?: never; single?: never }
    /** one output per page */
    | { single: true; ranges?: never; every?: never }
  );

export async function pdfSplit(bytes: Uint8Array, opts: SplitOptions): Promise<Uint8Array[]> {
  const { doc } = await openPdf(bytes, { password: opts.password });
  const count = doc.getPageCount();
  let groups: number[][];
  if (opts.ranges) {
    if (!Array.isArray(opts.ranges) || !opts.ranges.length) throw invalidArgument('ranges: give at least one range.');
    groups = opts.ranges.map((r, i) => resolvePages(r, count, `ranges[${i}]`));
  } else if (opts.every !== undefined) {
    if (!Number.isInteger(opts.every) || opts.every < 1) throw invalidArgument('every: a whole number of pages, at least 1.');
    groups = [];
    for (let i = 0; i < count; i += opts.every) groups.push([...Array(Math.min(opts.every, count - i)).keys()].map((k) => i + k));
  } else if (opts.single) {
    groups = [...Array(count).keys()].map((i) => [i]);
  } else throw invalidArgument('split needs one of ranges, every or single.');
  const outline = readOutline(doc);
  const outputs: Uint8Array[] = [];
  for (const group of groups) {
    const out = await PDFDocument.create({ updateMetadata: false });
    const pages = await out.copyPages(doc, group);
    const refs = new Map<number, PDFRef>();
    pages.forEach((p, i) => {
      out.addPage(p);
      if (!refs.has(group[i]!)) refs.set(group[i]!, p.ref);
    });
    writeOutline(out, retarget(outline, (i) => refs.get(i)));
    outputs.push(await out.save({ useObjectStreams: true }));
  }
  return outputs;
}
