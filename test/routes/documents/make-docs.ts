/**
 * Documents the document tests (and scripts/bench/documents.ts) create: one two-column page layout drawn
 * by pdf-lib and by Ghostscript from PostScript, a scanned page (ImageMagick), DOCX (XML zipped with
 * fflate: the `docx` package is not installed), XLSX (exceljs), PPTX (XML zipped with fflate), HTML.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { PDFDocument, type PDFFont, rgb, StandardFonts } from '@cantoo/pdf-lib';
import { strToU8, zipSync } from 'fflate';

const require = createRequire(import.meta.url);

export const TITLE = 'Document Understanding Report';
export const HEADER = 'ACME Research Quarterly';
export const INTRO =
  'Documents arrive in many shapes. This report describes how the service reads portable documents with two columns, headings, lists and tables, and how it keeps the reading order a person would follow.';
export const METHODS = 'We measured extraction quality on a small set of generated pages with known content.';
export const LIST = [
  'Text layers are read with their positions',
  'Columns are found from vertical gutters',
  'Tables come from aligned cells',
];
export const RESULTS =
  'The reconstructed text followed the columns from top to bottom, left before right, and every heading kept its level in the outline.';
export const DISCUSSION = 'Repeated headers and footers were removed, while captions stayed next to the tables they describe.';
export const CONCLUSION = 'Layout analysis over a text layer is fast, and scanned pages can take the OCR path instead.';
export const TABLE = [['Name', 'Value', 'Unit'], ['Alpha', '1.5', 'kg'], ['Beta', '2.25', 'm'], ['Gamma', '3.0', 's']];
export const CAPTION = 'Table 1: Measured values';
export const PARAGRAPH =
  'The quick brown fox jumps over the lazy dog. Optical character recognition turns pictures of printed text into machine-encoded text, so that documents can be searched, edited and stored more compactly. Early systems needed to be trained with images of each character and worked on one font at a time.';

type Op = { text: string; x: number; y: number; size: number; bold?: boolean };

/** The page content as positioned text runs (y from the top), shared by the pdf-lib and PostScript writers. */
export function layoutOps(width: (text: string, size: number, bold: boolean) => number, pages = 2): Op[][] {
  const out: Op[][] = [];
  const wrap = (text: string, x: number, y: number, w: number, size: number, lead = size * 1.25): { ops: Op[]; y: number } => {
    const ops: Op[] = [];
    let line = '';
    for (const word of text.split(' ')) {
      const next = line ? `${line} ${word}` : word;
      if (width(next, size, false) > w && line) {
        ops.push({ text: line, x, y, size });
        y += lead;
        line = word;
      } else line = next;
    }
    if (line) {
      ops.push({ text: line, x, y, size });
      y += lead;
    }
    return { ops, y };
  };
  /** A numbered section: its heading, then its text wrapped to `w` at `x`; the y below the text. */
  const section = (ops: Op[], title: string, text: string, x: number, y: number, w = 235) => {
    ops.push({ text: title, x, y, size: 14, bold: true });
    const r = wrap(text, x, y + 22, w, 10);
    ops.push(...r.ops);
    return r.y;
  };
  for (let p = 1; p <= pages; p++) {
    const ops: Op[] = [{ text: HEADER, x: 50, y: 40, size: 8 }, { text: `Page ${p}`, x: 290, y: 765, size: 8 }];
    if (p === 1) {
      ops.push({ text: TITLE, x: 50, y: 90, size: 22, bold: true });
      // left column
      let y = section(ops, '1 Introduction', INTRO, 50, 140) + 10;
      y = section(ops, '2 Methods', METHODS, 50, y) + 6;
      for (const item of LIST) {
        ops.push({ text: '\u2022', x: 54, y, size: 10 }, { text: item, x: 64, y, size: 10 });
        y += 14;
      }
      // right column
      const right = section(ops, '3 Results', RESULTS, 320, 140) + 10;
      section(ops, '4 Discussion', DISCUSSION, 320, right);
      // full-width table with caption
      y = 420;
      ops.push({ text: CAPTION, x: 50, y, size: 10 });
      y += 20;
      TABLE.forEach((row, i) => {
        row.forEach((c, j) => ops.push({ text: c, x: 50 + j * 180, y, size: 10, bold: i === 0 }));
        y += 16;
      });
    } else {
      section(ops, `${3 + p} Conclusion`, CONCLUSION, 50, 90, 500);
    }
    out.push(ops);
  }
  return out;
}

export async function twoColumnPdfLib(pages = 2): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const font = (b?: boolean): PDFFont => (b ? bold : regular);
  for (const ops of layoutOps((t, s, b) => font(b).widthOfTextAtSize(t, s), pages)) {
    const page = doc.addPage([612, 792]);
    for (const o of ops) page.drawText(o.text, { x: o.x, y: 792 - o.y, size: o.size, font: font(o.bold), color: rgb(0, 0, 0) });
  }
  return doc.save();
}

/** The same layout as PostScript, turned into PDF by Ghostscript (fonts: Helvetica → Nimbus Sans). */
export async function twoColumnGhostscript(dir: string, pages = 2): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const ps: string[] = ['%!PS-Adobe-3.0', '<< /PageSize [612 792] >> setpagedevice'];
  const esc = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`).replace(/\u2022/g, '\\267');
  for (const ops of layoutOps((t, s, b) => (b ? bold : regular).widthOfTextAtSize(t, s), pages)) {
    for (const o of ops) {
      const f = o.bold ? '/Helvetica-Bold' : '/Helvetica';
      // StandardEncoding (Helvetica's own) has the bullet at octal 267
      ps.push(`${f} findfont ${o.size} scalefont setfont ${o.x} ${792 - o.y} moveto (${esc(o.text)}) show`);
    }
    ps.push('showpage');
  }
  const psPath = join(dir, 'two-column.ps'), pdfPath = join(dir, 'two-column-gs.pdf');
  writeFileSync(psPath, ps.join('\n'));
  execFileSync('gs', ['-q', '-dBATCH', '-dNOPAUSE', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${pdfPath}`, psPath]);
  return new Uint8Array(readFileSync(pdfPath));
}

export const dejavu = (name = 'DejaVuSerif.ttf') => join(require.resolve('dejavu-fonts-ttf/package.json'), '..', 'ttf', name);

/** A paragraph rendered by ImageMagick (gray PNG, 300-dpi-like glyph sizes). */
export function paragraphPng(dir: string, text = PARAGRAPH, name = 'paragraph.png'): string {
  const out = join(dir, name);
  execFileSync('convert', [
    '-size',
    '1500x',
    '-background',
    'white',
    '-fill',
    'black',
    '-font',
    dejavu(),
    '-pointsize',
    '30',
    `caption:${text}`,
    '-bordercolor',
    'white',
    '-border',
    '60',
    out,
  ]);
  return out;
}

/** A PDF page rendered at 150 dpi, rotated 90° and skewed 3°, wrapped back into a PDF (a scan). */
export async function scannedPdf(dir: string, pdfPath: string, page = 1): Promise<{ png: string; pdf: Uint8Array }> {
  const base = join(dir, 'scan');
  execFileSync('pdftoppm', ['-r', '200', '-f', String(page), '-l', String(page), '-gray', '-png', '-singlefile', pdfPath, base]);
  const png = join(dir, 'scan-rotated.png');
  execFileSync('convert', [
    `${base}.png`,
    '-seed',
    '7',
    '-background',
    'white',
    '-rotate',
    '93',
    '-attenuate',
    '0.3',
    '+noise',
    'Gaussian',
    '-colorspace',
    'Gray',
    png,
  ]);
  // ImageMagick's policy forbids writing PDF here: wrap the JPEG with pdf-lib at 200 dpi instead
  const jpg = join(dir, 'scan-rotated.jpg');
  execFileSync('convert', [png, '-quality', '85', jpg]);
  const doc = await PDFDocument.create();
  const img = await doc.embedJpg(readFileSync(jpg));
  const w = (img.width * 72) / 200, h = (img.height * 72) / 200;
  doc.addPage([w, h]).drawImage(img, { x: 0, y: 0, width: w, height: h });
  return { png, pdf: await doc.save() };
}

// ---------------------------------------------------------------- office documents

const xmlEsc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function docx(): Uint8Array {
  const p = (text: string, style?: string) =>
    `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}<w:r><w:t xml:space="preserve">${xmlEsc(text)}</w:t></w:r></w:p>`;
  const li = (text: string) =>
    `<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>${
      xmlEsc(text)
    }</w:t></w:r></w:p>`;
  const cell = (t: string) => `<w:tc><w:p><w:r><w:t>${xmlEsc(t)}</w:t></w:r></w:p></w:tc>`;
  const table = `<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/></w:tblPr>${
    TABLE.map((r) => `<w:tr>${r.map(cell).join('')}</w:tr>`).join('')
  }</w:tbl>`;
  const body = [
    p(TITLE, 'Title'),
    p('1 Introduction', 'Heading1'),
    p(INTRO),
    p('2 Methods', 'Heading1'),
    p(METHODS),
    ...LIST.map(li),
    table,
    p(CONCLUSION),
  ].join('');
  const files: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/></Types>',
    ),
    '_rels/.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    ),
    'word/_rels/document.xml.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>',
    ),
    'word/styles.xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">' +
        '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>' +
        '<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>' +
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>' +
        '<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/></w:style>' +
        '<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/></w:style></w:styles>',
    ),
    'word/numbering.xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:numbering xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="\u2022"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>',
    ),
    'word/document.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`,
    ),
  };
  return zipSync(files);
}

export async function xlsx(): Promise<Uint8Array> {
  const ExcelJS = ((await import('exceljs')) as unknown as { default: typeof import('exceljs') }).default;
  const wb = new ExcelJS.Workbook();
  const s1 = wb.addWorksheet('Measurements');
  for (const r of TABLE) s1.addRow(r.map((c, i) => (i === 1 && /^[\d.]+$/.test(c) ? Number(c) : c)));
  const s2 = wb.addWorksheet('Notes');
  s2.addRow(['Key', 'Note']);
  s2.addRow(['k1', 'first note']);
  return new Uint8Array(await wb.xlsx.writeBuffer());
}

export function pptx(): Uint8Array {
  const ns =
    'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
  const sp = (ph: string | null, paras: string[], bullets = false) =>
    `<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr>${
      ph ? `<p:ph type="${ph}"/>` : ''
    }</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/>${
      paras.map((t) => `<a:p>${bullets ? '<a:pPr><a:buChar char="\u2022"/></a:pPr>' : ''}<a:r><a:t>${xmlEsc(t)}</a:t></a:r></a:p>`).join('')
    }</p:txBody></p:sp>`;
  const tbl =
    `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="t"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl>${
      TABLE.map((r) =>
        `<a:tr h="0">${
          r.map((c) => `<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>${xmlEsc(c)}</a:t></a:r></a:p></a:txBody></a:tc>`).join('')
        }</a:tr>`
      ).join('')
    }</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
  const slide = (inner: string) =>
    strToU8(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld ${ns}><p:cSld><p:spTree>${inner}</p:spTree></p:cSld></p:sld>`);
  return zipSync({
    '[Content_Types].xml': strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/></Types>',
    ),
    'ppt/presentation.xml': strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><p:presentation ${ns}><p:sldIdLst><p:sldId id="256" r:id="rId2"/><p:sldId id="257" r:id="rId1"/></p:sldIdLst></p:presentation>`,
    ),
    'ppt/_rels/presentation.xml.rels': strToU8(
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide2.xml"/></Relationships>',
    ),
    // slide2.xml is shown first (sldIdLst order), as PowerPoint does after reordering
    'ppt/slides/slide2.xml': slide(sp('title', ['Opening']) + sp(null, LIST, true)),
    'ppt/slides/slide1.xml': slide(sp('title', ['Numbers']) + tbl),
  });
}

export const HTML = `<!DOCTYPE html><html><head><title>t</title><style>p{color:red}</style><script>var x = 1;</script></head><body>
<h1>${TITLE}</h1><p>${INTRO}</p><h2>Data</h2>
<table><thead><tr>${TABLE[0]!.map((c) => `<th>${c}</th>`).join('')}</tr></thead><tbody>${
  TABLE.slice(1).map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')
}</tbody></table>
<ul>${LIST.map((l) => `<li>${l}</li>`).join('')}</ul></body></html>`;

export const EML = [
  'From: Alice Example <alice@example.com>',
  'To: bob@example.com',
  'Subject: =?UTF-8?B?UXVhcnRlcmx5IG51bWJlcnM=?=',
  'Date: Mon, 5 Oct 2026 10:00:00 +0000',
  'MIME-Version: 1.0',
  'Content-Type: multipart/alternative; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: quoted-printable',
  '',
  'Hello Bob,=0A=0AThe numbers are in =E2=80=94 see below.',
  '--b1--',
  '',
].join('\r\n');

/** Character error rate: edit distance over the reference length, whitespace collapsed. */
export function cer(hyp: string, ref: string): number {
  const a = hyp.replace(/\s+/g, ' ').trim(), b = ref.replace(/\s+/g, ' ').trim();
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]! / b.length;
}

/** POST one document as multipart (field `file`) with options as further fields. */
export async function post(
  request: (path: string, init?: RequestInit) => Promise<Response>,
  path: string,
  bytes: Uint8Array,
  filename: string,
  options: Record<string, unknown> = {},
): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>]), filename);
  for (const [k, v] of Object.entries(options)) form.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  return request(path, { method: 'POST', body: form });
}

// ---------------------------------------------------------------- layout faults (Chromium and Ghostscript)

/** HTML printed to PDF by Chromium (the same path a browser's "Save as PDF" takes). */
export function chromiumPdf(dir: string, name: string, html: string): Uint8Array {
  const htmlPath = join(dir, `${name}.html`), pdfPath = join(dir, `${name}.pdf`);
  writeFileSync(htmlPath, html);
  execFileSync('chromium', [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-pdf-header-footer',
    `--print-to-pdf=${pdfPath}`,
    `file://${htmlPath}`,
  ], { stdio: 'ignore', timeout: 60_000 });
  return new Uint8Array(readFileSync(pdfPath));
}

export const JUSTIFIED =
  'Creates a file that generates the definitions of every function containing a C vector and writes them to the output named on the command line, one definition per line, so that a later build step can include the file without reading the sources again.';

/**
 * A justified paragraph set the way pdfTeX sets a narrow measure: every line stretched to the same width,
 * so the spaces between words grow to one and a half or two ems.
 */
export function justifiedGhostscript(dir: string, text = JUSTIFIED): Uint8Array {
  const size = 10, measure = 250, x0 = 72;
  const doc = { width: (s: string) => s.length * size * 0.5 }; // Courier-like estimate, only to break lines
  const words = text.split(' ');
  const lines: string[][] = [];
  let cur: string[] = [];
  for (const w of words) {
    if (cur.length && doc.width([...cur, w].join(' ')) > measure * 0.72) {
      lines.push(cur);
      cur = [];
    }
    cur.push(w);
  }
  if (cur.length) lines.push(cur);
  const esc = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`);
  const ps: string[] = ['%!PS-Adobe-3.0', '<< /PageSize [612 792] >> setpagedevice', `/Times-Roman findfont ${size} scalefont setfont`];
  lines.forEach((ws, i) => {
    const y = 700 - i * 13;
    const last = i === lines.length - 1;
    // widthshow-like justification: the free space is shared among the gaps (the last line is set ragged)
    ps.push(`/ws [${ws.map((w) => `(${esc(w)})`).join(' ')}] def`);
    ps.push(`/total 0 ws { stringwidth pop add } forall def`);
    ps.push(`/gap ${last ? `${size * 0.25}` : `${measure} total sub ${Math.max(1, ws.length - 1)} div`} def`);
    ps.push(`${x0} ${y} moveto ws { show gap 0 rmoveto } forall`);
  });
  ps.push('showpage');
  const psPath = join(dir, 'justified.ps'), pdfPath = join(dir, 'justified.pdf');
  writeFileSync(psPath, ps.join('\n'));
  execFileSync('gs', ['-q', '-dBATCH', '-dNOPAUSE', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${pdfPath}`, psPath]);
  return new Uint8Array(readFileSync(pdfPath));
}

/**
 * A book set as pdfTeX sets one (Letter, Times): running heads a little below the top margin, the page
 * number with the chapter on even pages and with the section on odd pages; chapter 2 on pages 1–2,
 * chapter 3 on pages 3–8, so each head repeats on fewer than half of the pages.
 */
export function bookGhostscript(dir: string): { pdf: Uint8Array; body: string[] } {
  const ps: string[] = ['%!PS-Adobe-3.0', '<< /PageSize [612 792] >> setpagedevice'];
  const body: string[] = [];
  for (let p = 1; p <= 8; p++) {
    const chapter = p <= 2 ? 'Chapter 2: Installation' : 'Chapter 3: Utilities';
    const head = p % 2 === 0 ? `${p}   ${chapter}` : `${p <= 2 ? '2.1 Requirements' : '3.1 Command line'}   ${p}`;
    ps.push('/Times-Italic findfont 10 scalefont setfont', `${p % 2 === 0 ? 72 : 380} ${792 - 82} moveto (${head}) show`);
    ps.push('/Times-Roman findfont 11 scalefont setfont');
    for (let l = 0; l < 40; l++) {
      const text = `Line ${l + 1} of page ${p} tells how the utility reads its input and writes its output.`;
      body.push(text);
      ps.push(`72 ${792 - 110 - l * 14} moveto (${text}) show`);
    }
    ps.push('showpage');
  }
  const psPath = join(dir, 'book.ps'), pdfPath = join(dir, 'book.pdf');
  writeFileSync(psPath, ps.join('\n'));
  execFileSync('gs', ['-q', '-dBATCH', '-dNOPAUSE', '-dSAFER', '-sDEVICE=pdfwrite', `-sOutputFile=${pdfPath}`, psPath]);
  return { pdf: new Uint8Array(readFileSync(pdfPath)), body };
}
