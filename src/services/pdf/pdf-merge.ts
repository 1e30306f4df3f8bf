/** pdfMerge: several PDFs (optionally a page selection of each) into one, bookmarks kept. */
import { PDFDocument, type PDFRef } from '@cantoo/pdf-lib';
import { invalidArgument } from '../errors.ts';
import { openPdf } from './open.ts';
import { type OutlineNode, readOutline, retarget, writeOutline } from './outline.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';

export interface MergeInput {
  bytes: Uint8Array;
  /** 1-based selection, e.g. "1-3,5"; default every page */
  pages?: PageSelection;
  password?: string;
}

export interface MergeOptions {
  /** keep each input's bookmarks (default true) */
  bookmarks?: boolean;
}

export async function pdfMerge(inputs: MergeInput[], opts: MergeOptions = {}): Promise<Uint8Array> {
  if (!inputs.length) throw invalidArgument('merge needs at least one PDF.');
  const out = await PDFDocument.create({ updateMetadata: false });
  const tree: ReturnType<typeof retarget> = [];
  for (const [n, input] of inputs.entries()) {
    const { doc } = await openPdf(input.bytes, { password: input.password });
    const indices = resolvePages(input.pages, doc.getPageCount(), `inputs[${n}].pages`);
    const copied = await out.copyPages(doc, indices);
    const firstRef = new Map<number, PDFRef>();
    copied.forEach((p, i) => {
      out.addPage(p);
      if (!firstRef.has(indices[i]!)) firstRef.set(indices[i]!, p.ref);
    });
    if (opts.bookmarks !== false) {
      const outline: OutlineNode[] = readOutline(doc);
      tree.push(...retarget(outline, (i) => firstRef.get(i)));
    }
  }
  writeOutline(out, tree);
  return out.save({ useObjectStreams: true });
}
