/** Typed, positioned document elements: what layout analysis produces and every output format renders. */
export type ElementType =
  | 'title'
  | 'section_header'
  | 'paragraph'
  | 'list_item'
  | 'table'
  | 'figure'
  | 'caption'
  | 'page_header'
  | 'page_footer'
  | 'formula'
  | 'code';

/** Points (1/72 in), origin top-left of the displayed page; for images and OCR'd pages, of the upright page. */
export interface BBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface TableCell {
  row: number;
  col: number;
  text: string;
  bbox: BBox | null;
  /** first row of a table reconstructed from aligned text, or a header cell of the source format */
  header: boolean;
}

export interface DocElement {
  type: ElementType;
  text: string;
  /** 1-based page, null for formats without pages (DOCX, HTML, …) */
  page: number | null;
  bbox: BBox | null;
  /** headings: 1 = title level, 2.. = section levels */
  level?: number;
  /** list items */
  ordered?: boolean;
  marker?: string;
  /** tables */
  rows?: number;
  cols?: number;
  cells?: TableCell[];
  /** figures and tables: caption text (the caption element is also emitted, right after) */
  caption?: string;
  /** figures with include_figure_images: the cropped region */
  image?: { mime_type: string; data: string } | null;
  /** code blocks: the language when it is evident (console, c, python, javascript) */
  language?: string;
  /** where the text came from */
  source?: 'text' | 'ocr';
}

export interface PageMeta {
  page: number;
  width: number;
  height: number;
  source: 'text' | 'ocr';
  rotation?: number;
  deskew?: number;
}

export interface AnalysedDocument {
  format: string;
  pages: PageMeta[];
  elements: DocElement[];
}

// ---------------------------------------------------------------- Markdown

const mdEscapeCell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ').trim();

export function tableGrid(e: DocElement): string[][] {
  const rows = e.rows ?? 0, cols = e.cols ?? 0;
  const grid = Array.from({ length: rows }, () => Array.from({ length: cols }, () => ''));
  for (const c of e.cells ?? []) {
    if (grid[c.row] && c.col < cols) {
      grid[c.row]![c.col] = grid[c.row]![c.col] ? `${grid[c.row]![c.col]} ${c.text}` : c.text;
    }
  }
  return grid;
}

export function markdownTable(grid: string[][]): string {
  if (!grid.length) return '';
  const cols = Math.max(...grid.map((r) => r.length), 1);
  const row = (r: string[]) => `| ${Array.from({ length: cols }, (_, i) => mdEscapeCell(r[i] ?? '')).join(' | ')} |`;
  return [row(grid[0]!), `| ${Array.from({ length: cols }, () => '---').join(' | ')} |`, ...grid.slice(1).map(row)].join('\n');
}

/** Markdown of elements; page headers and footers are left out. */
export function elementsToMarkdown(elements: DocElement[]): string {
  const out: string[] = [];
  let prevList = false;
  for (const e of elements) {
    if (e.type === 'page_header' || e.type === 'page_footer') continue;
    const isList = e.type === 'list_item';
    let s: string;
    switch (e.type) {
      case 'title':
        s = `# ${oneLine(e.text)}`;
        break;
      case 'section_header':
        s = `${'#'.repeat(Math.min(6, Math.max(2, e.level ?? 2)))} ${oneLine(e.text)}`;
        break;
      case 'list_item':
        s = `${e.ordered ? `${(e.marker ?? '1.').replace(/[)]$/, '.')}` : '-'} ${oneLine(e.text)}`;
        break;
      case 'table':
        s = markdownTable(tableGrid(e));
        break;
      case 'figure':
        s = '<!-- image -->';
        break;
      case 'formula':
        s = `$$\n${e.text}\n$$`;
        break;
      case 'code':
        s = `\`\`\`${e.language ?? ''}\n${e.text.replace(/\s+$/, '')}\n\`\`\``;
        break;
      case 'caption':
        s = `*${oneLine(e.text)}*`;
        break;
      default:
        s = e.text.trim();
    }
    if (!s) continue;
    out.push(isList && prevList ? `\n${s}` : `\n\n${s}`);
    prevList = isList;
  }
  return `${out.join('').trim()}\n`;
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();

/** Runs of list items wrapped in their container tag, written to `out`: `item` before each item, `close` after a run. */
function listContainers(out: string[], tag: { ordered: string; unordered: string }) {
  let open: string | null = null;
  const close = () => {
    if (open) {
      out.push(`</${open}>`);
      open = null;
    }
  };
  const item = (ordered: boolean | undefined) => {
    const want = ordered ? tag.ordered : tag.unordered;
    if (open !== want) {
      close();
      out.push(`<${want}>`);
      open = want;
    }
  };
  return { item, close };
}

// ---------------------------------------------------------------- HTML

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function elementsToHtml(elements: DocElement[], title = 'document'): string {
  const body: string[] = [];
  const lists = listContainers(body, { ordered: 'ol', unordered: 'ul' });
  for (const e of elements) {
    const attrs = ` data-type="${e.type}"${e.page !== null ? ` data-page="${e.page}"` : ''}${
      e.bbox ? ` data-bbox="${[e.bbox.x, e.bbox.y, e.bbox.width, e.bbox.height].join(',')}"` : ''
    }`;
    if (e.type === 'list_item') {
      lists.item(e.ordered);
      body.push(`<li${attrs}>${esc(oneLine(e.text))}</li>`);
      continue;
    }
    lists.close();
    switch (e.type) {
      case 'title':
        body.push(`<h1${attrs}>${esc(oneLine(e.text))}</h1>`);
        break;
      case 'section_header': {
        const h = Math.min(6, Math.max(2, e.level ?? 2));
        body.push(`<h${h}${attrs}>${esc(oneLine(e.text))}</h${h}>`);
        break;
      }
      case 'table': {
        const grid = tableGrid(e);
        const rows = grid.map((r, i) => `<tr>${r.map((c) => (i === 0 ? `<th>${esc(c)}</th>` : `<td>${esc(c)}</td>`)).join('')}</tr>`);
        body.push(
          `<table${attrs}>${e.caption ? `<caption>${esc(e.caption)}</caption>` : ''}<thead>${rows[0] ?? ''}</thead><tbody>${
            rows.slice(1).join('')
          }</tbody></table>`,
        );
        break;
      }
      case 'figure':
        body.push(
          `<figure${attrs}>${e.image ? `<img src="data:${e.image.mime_type};base64,${e.image.data}" alt="${esc(e.caption ?? '')}">` : ''}${
            e.caption ? `<figcaption>${esc(e.caption)}</figcaption>` : ''
          }</figure>`,
        );
        break;
      case 'caption':
        break; // inside its figure/table
      case 'page_header':
        body.push(`<header${attrs}>${esc(oneLine(e.text))}</header>`);
        break;
      case 'page_footer':
        body.push(`<footer${attrs}>${esc(oneLine(e.text))}</footer>`);
        break;
      case 'formula':
        body.push(`<div class="formula"${attrs}>${esc(e.text)}</div>`);
        break;
      case 'code':
        body.push(`<pre${attrs}><code${e.language ? ` class="language-${e.language}"` : ''}>${esc(e.text)}</code></pre>`);
        break;
      default:
        body.push(`<p${attrs}>${esc(e.text.trim()).replace(/\n/g, '<br>')}</p>`);
    }
  }
  lists.close();
  return `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${esc(title)}</title></head>\n<body>\n${
    body.join('\n')
  }\n</body></html>\n`;
}

// ---------------------------------------------------------------- DocTags (Docling)

/**
 * Docling's DocTags: `<doctag>` holding one tag per element; a positioned element starts with four
 * location tokens `<loc_N>` (x0, y0, x1, y1 on a 0–499 grid (500 steps) of the page, origin top-left); tables are
 * OTSL (`<otsl>` with `<ched>` header cells, `<fcel>` filled and `<ecel>` empty cells, `<nl>` row ends);
 * pages are separated by `<page_break>`. Text is XML-escaped.
 */
export function elementsToDocTags(elements: DocElement[], pages: PageMeta[]): string {
  const size = new Map(pages.map((p) => [p.page, p]));
  const loc = (e: { bbox: BBox | null; page: number | null }) => {
    const p = e.page !== null ? size.get(e.page) : undefined;
    if (!e.bbox || !p) return '';
    const g = (v: number, max: number) => Math.max(0, Math.min(499, Math.round((v / max) * 500)));
    return `<loc_${g(e.bbox.x, p.width)}><loc_${g(e.bbox.y, p.height)}><loc_${g(e.bbox.x + e.bbox.width, p.width)}><loc_${
      g(e.bbox.y + e.bbox.height, p.height)
    }>`;
  };
  const out: string[] = ['<doctag>'];
  let page: number | null = elements.find((e) => e.page !== null)?.page ?? null;
  const lists = listContainers(out, { ordered: 'ordered_list', unordered: 'unordered_list' });
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i]!;
    if (e.page !== null && page !== null && e.page !== page) {
      lists.close();
      out.push('<page_break>');
    }
    if (e.page !== null) page = e.page;
    const text = esc(oneLine(e.text));
    if (e.type === 'list_item') {
      lists.item(e.ordered);
      out.push(`<list_item>${loc(e)}${text}</list_item>`);
      continue;
    }
    lists.close();
    switch (e.type) {
      case 'title':
        out.push(`<title>${loc(e)}${text}</title>`);
        break;
      case 'section_header': {
        const t = `section_header_level_${Math.max(1, (e.level ?? 2) - 1)}`;
        out.push(`<${t}>${loc(e)}${text}</${t}>`);
        break;
      }
      case 'table': {
        const grid = tableGrid(e);
        const cells = grid.map((r, ri) =>
          r.map((c) => (c === '' ? '<ecel>' : `${ri === 0 ? '<ched>' : '<fcel>'}${esc(c)}`)).join('') + '<nl>'
        ).join('');
        const cap = captionFor(elements, i);
        out.push(`<otsl>${loc(e)}${cells}${cap ? `<caption>${loc(cap)}${esc(oneLine(cap.text))}</caption>` : ''}</otsl>`);
        break;
      }
      case 'figure': {
        const cap = captionFor(elements, i);
        out.push(`<picture>${loc(e)}${cap ? `<caption>${loc(cap)}${esc(oneLine(cap.text))}</caption>` : ''}</picture>`);
        break;
      }
      case 'caption':
        if (!isAttachedCaption(elements, i)) out.push(`<caption>${loc(e)}${text}</caption>`);
        break;
      case 'page_header':
        out.push(`<page_header>${loc(e)}${text}</page_header>`);
        break;
      case 'page_footer':
        out.push(`<page_footer>${loc(e)}${text}</page_footer>`);
        break;
      case 'formula':
        out.push(`<formula>${loc(e)}${text}</formula>`);
        break;
      case 'code':
        out.push(`<code>${loc(e)}${e.language ? `<_${e.language}_>` : ''}${esc(e.text)}</code>`);
        break;
      default:
        out.push(`<text>${loc(e)}${text}</text>`);
    }
  }
  lists.close();
  out.push('</doctag>');
  return out.join('');
}

/** The caption element next to a figure or table (before or after it in reading order). */
const captionFor = (els: DocElement[], i: number): DocElement | undefined => {
  const e = els[i]!;
  if (!e.caption) return undefined;
  return [els[i - 1], els[i + 1]].find((c) => c?.type === 'caption' && c.text === e.caption);
};
const isAttachedCaption = (els: DocElement[], i: number): boolean =>
  [els[i - 1], els[i + 1]].some((o) => (o?.type === 'figure' || o?.type === 'table') && o.caption === els[i]!.text);
