/** pdfRemoveWatermark: remove exactly the marks pdfWatermark laid (tagged /SvcWatermark), nothing else. */
import { openPdf } from './open.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { removeMarks } from './watermark-tag.ts';

export async function pdfRemoveWatermark(
  bytes: Uint8Array,
  opts: { pages?: PageSelection; password?: string } = {},
): Promise<{ pdf: Uint8Array; removed: number }> {
  const { doc } = await openPdf(bytes, { password: opts.password });
  const removed = removeMarks(doc, [...new Set(resolvePages(opts.pages, doc.getPageCount()))]);
  return { pdf: removed ? await doc.save({ useObjectStreams: true }) : bytes, removed };
}
