/** The 100-page PDF the summarization test and the text benchmark summarize: a title and one fact a page. */
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';

export async function hundredPagePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= 100; p++) {
    const page = doc.addPage([595, 842]);
    page.drawText(`Harbour report ${p}.`, { x: 50, y: 780, size: 16, font });
    page.drawText(`On day ${p} the harbour shipped ${p * 7} crates of apples to the northern towns.`, { x: 50, y: 740, size: 11, font });
  }
  return doc.save();
}
