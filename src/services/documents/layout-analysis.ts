/**
 * Layout analysis of positioned text (a PDF text layer from pdfLayout, or OCR lines) into typed elements
 * in reading order. Rules, in the order they run (docs/api/documents.md explains each choice):
 *
 * 1. Segments: a line is cut where two words are more than one em apart (columns, table cells); a list
 *    marker stays with its text.
 * 2. Page headers/footers: segments in the top or bottom 9% of a page whose text (digits masked) repeats on
 *    at least half of the pages (two or more), and lone page numbers there.
 * 3. Tables from aligned text: consecutive rows of two or more short segments (≤ 5 words on average,
 *    none over 12) whose x-ranges fall into the same two-or-more columns, unless the segments fill their
 *    columns like lines of running text do.
 * 4. Reading order: recursive cuts. A region with a vertical gutter (a free x-band at least 0.9 em wide
 *    with content on both sides) is read column by column, left to right; otherwise it is cut into
 *    horizontal strips, and consecutive strips are grouped while they share a gutter and follow each other
 *    closely (so a multi-column section under a full-width title is read column by column, and a line
 *    after a wide gap below it is not pulled into one of its columns).
 * 5. Blocks: consecutive lines of one column with the same size and weight and a small vertical gap form a
 *    paragraph; a list marker starts a new item; a hyphen at a line end before a lowercase word is removed.
 * 6. Types: the body size is the most common size (by characters). Larger (≥ 1.15×) or bold short blocks
 *    are headings, levelled by size (the largest on the first page is the title); blocks starting with a
 *    bullet or enumerator are list items; "Figure n"/"Table n" next to an image or table is its caption;
 *    math-dense short lines are formulas; images are figures.
 */
import type { BBox, DocElement, PageMeta, TableCell } from './elements.ts';

export interface InWord {
  text: string;
  box: BBox;
  font?: string;
  fontSize: number;
  bold?: boolean;
}
export interface InLine {
  text: string;
  box: BBox;
  words: InWord[];
}
export interface InPage {
  page: number;
  width: number;
  height: number;
  lines: InLine[];
  images: { box: BBox }[];
  source: 'text' | 'ocr';
  rotation?: number;
  deskew?: number;
}

interface Seg {
  text: string;
  box: BBox;
  size: number;
  bold: boolean;
  mono: boolean;
  chars: number;
  words: InWord[];
  page: number;
}
type Unit = { kind: 'seg'; seg: Seg; box: BBox } | { kind: 'table'; el: DocElement; box: BBox } | { kind: 'image'; box: BBox };

const BULLET = /^([•◦▪▫●○■□‣⁃∙·*+–—-])(\s+|$)/;
const ENUM = /^(\(?(\d{1,3}|[a-zA-Z]|[ivxlcIVXLC]{1,5})[.)])(\s+|$)/;
const isBoldFont = (f = '') => /bold|black|heavy|semibold|demi/i.test(f);
/** Monospaced font names as producers write them (Courier, DejaVu Sans Mono, Consolas, TeX's cmtt, …). */
const MONO_FONT = /mono|courier|consol|menlo|inconsolata|typewriter|cmtt|lmtt|sfmono|code|fixed/i;
const isMono = (w: InWord) => !!w.font && MONO_FONT.test(w.font);
/** A line that reads as code or a shell command: braces, statement ends, calls, preprocessor lines, a prompt. */
const CODE_LINE =
  /^\s*([{}]|#\s*(include|define|if|endif)\b|\$ [a-z]|(return|if|for|while|int|void|char|const|let|var|def|import|from)\b.*[;:{(]|\w+\s*\([^)]*\)\s*[;{])|[;{}]\s*$/;
const right = (b: BBox) => b.x + b.width;
const bottom = (b: BBox) => b.y + b.height;
const unionBox = (bs: BBox[]): BBox => {
  const x0 = Math.min(...bs.map((b) => b.x)), y0 = Math.min(...bs.map((b) => b.y));
  const x1 = Math.max(...bs.map(right)), y1 = Math.max(...bs.map(bottom));
  return { x: r2(x0), y: r2(y0), width: r2(x1 - x0), height: r2(y1 - y0) };
};
const r2 = (n: number) => Math.round(n * 100) / 100;

// ---------------------------------------------------------------- 1. segments

function segmentsOf(p: InPage): Seg[] {
  const out: Seg[] = [];
  for (const line of p.lines) {
    const words = [...line.words].filter((w) => w.text.trim()).sort((a, b) => a.box.x - b.box.x);
    let cur: InWord[] = [];
    const flush = () => {
      if (cur.length) out.push(makeSeg(cur, p.page));
      cur = [];
    };
    // justified text spreads every gap of a line alike; a column gutter or a table cell boundary is a gap
    // far wider than the line's usual one, or wider than justification ever stretches a space
    const gaps = words.slice(1).map((w, k) => w.box.x - right(words[k]!.box)).filter((g) => g > 0).sort((a, b) => a - b);
    const usual = gaps.length >= 5 ? gaps[(gaps.length - 1) >> 1]! : 0;
    // a justified line stretches every space by the same amount: equal gaps (to the glyphs' side bearings)
    const even = gaps.length >= 3 && gaps[gaps.length - 1]! - gaps[0]! <= Math.max(1.2, gaps[(gaps.length - 1) >> 1]! * 0.15);
    for (const w of words) {
      const prev = cur[cur.length - 1];
      if (prev) {
        const gap = w.box.x - right(prev.box);
        const em = Math.max(prev.fontSize, w.fontSize, 4);
        const markerOnly = cur.length === 1 && (BULLET.test(prev.text) || ENUM.test(prev.text));
        const vertical =
          Math.abs(w.box.y + w.box.height / 2 - (prev.box.y + prev.box.height / 2)) > Math.max(prev.box.height, w.box.height) * 0.7;
        const wide = even ? gap > em * 6 : gap > em * 1.0 && (gap > em * 2.5 || gap > usual * 2.2 || isMono(prev) !== isMono(w));
        if (vertical || (wide && !(markerOnly && gap < em * 3))) flush();
      }
      cur.push(w);
    }
    flush();
  }
  return out;
}

function makeSeg(words: InWord[], page: number): Seg {
  const text = words.map((w) => w.text).join(' ');
  const chars = words.reduce((s, w) => s + w.text.length, 0);
  const sizes = words.map((w) => w.fontSize).sort((a, b) => a - b);
  const boldChars = words.reduce((s, w) => s + (w.bold ?? isBoldFont(w.font) ? w.text.length : 0), 0);
  const monoChars = words.reduce((s, w) => s + (isMono(w) ? w.text.length : 0), 0);
  // OCR knows no fonts: there a line of code is known by its text
  const mono = words[0]?.font === undefined ? CODE_LINE.test(text) : monoChars > chars * 0.6;
  return {
    text,
    box: unionBox(words.map((w) => w.box)),
    size: sizes[sizes.length >> 1]!,
    bold: boldChars > chars * 0.6,
    mono,
    chars,
    words,
    page,
  };
}

// ---------------------------------------------------------------- 2. headers and footers

const maskDigits = (s: string) => s.toLowerCase().replace(/\d+/g, '#').replace(/\s+/g, ' ').trim();
const PAGE_NUMBER = /^(page\s*)?[#\d]+(\s*(of|\/)\s*[#\d]+)?$|^[-–]\s*\d+\s*[-–]$/i;

function markMargins(pages: InPage[], segs: Seg[][]): Set<Seg> {
  const marginal = new Set<Seg>();
  // the band: the top or bottom 12% of the page, and the first or last line there (a book's running head
  // sits a little lower than a letter's, and body text never comes above it)
  const edges = pages.map((_, i) => ({
    top: Math.min(...segs[i]!.map((s) => s.box.y)),
    foot: Math.max(...segs[i]!.map((s) => bottom(s.box))),
  }));
  const zone = (p: InPage, s: Seg) => {
    const e = edges[pages.indexOf(p)]!;
    if (bottom(s.box) <= p.height * 0.09 || (bottom(s.box) <= p.height * 0.12 && s.box.y <= e.top + s.box.height * 0.5)) return 'top';
    if (s.box.y >= p.height * 0.91 || (s.box.y >= p.height * 0.88 && bottom(s.box) >= e.foot - s.box.height * 0.5)) return 'bottom';
    return null;
  };
  const counts = new Map<string, Set<number>>();
  pages.forEach((p, i) => {
    for (const s of segs[i]!) {
      const z = zone(p, s);
      if (!z) continue;
      const key = `${z}:${maskDigits(s.text)}`;
      if (!counts.has(key)) counts.set(key, new Set());
      counts.get(key)!.add(p.page);
    }
  });
  // a band line that carries the page's printed number at one end ("12 Chapter 3", "3.1 Scope 13"): the
  // printed numbers follow the page index at one offset through the document
  const folio = (s: Seg) => {
    const m = /^(\d{1,4})\s+\D.*$|^.*\D\s+(\d{1,4})$/.exec(s.text.trim());
    return m && s.words.length <= 12 ? Number(m[1] ?? m[2]) : null;
  };
  const offsets = new Map<number, number>();
  pages.forEach((p, i) => {
    for (const s of segs[i]!) {
      const n = zone(p, s) ? folio(s) : null;
      if (n !== null) offsets.set(n - p.page, (offsets.get(n - p.page) ?? 0) + 1);
    }
  });
  const [offset, seen] = [...offsets.entries()].sort((a, b) => b[1] - a[1])[0] ?? [0, 0];
  pages.forEach((p, i) => {
    for (const s of segs[i]!) {
      const z = zone(p, s);
      if (!z) continue;
      if (seen >= 3 && folio(s) === p.page + offset) {
        marginal.add(s);
        continue;
      }
      // repeated on half the pages, or on three or more (a chapter's running head in a long book)
      const repeated = pages.length >= 2 && counts.get(`${z}:${maskDigits(s.text)}`)!.size >= Math.max(2, Math.min(pages.length * 0.5, 3));
      if (repeated || PAGE_NUMBER.test(s.text.trim())) marginal.add(s);
    }
  });
  return marginal;
}

// ---------------------------------------------------------------- 3. tables

function rowsOf(segs: Seg[]): Seg[][] {
  const sorted = [...segs].sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x);
  const rows: Seg[][] = [];
  for (const s of sorted) {
    const row = rows[rows.length - 1];
    const mid = s.box.y + s.box.height / 2;
    if (row && row.some((r) => Math.abs(r.box.y + r.box.height / 2 - mid) < Math.min(r.box.height, s.box.height) * 0.5)) row.push(s);
    else rows.push([s]);
  }
  return rows.map((r) => r.sort((a, b) => a.box.x - b.box.x));
}

/** Column x-ranges: union of the segments' x-ranges over all rows. */
function columnsOf(rows: Seg[][]): { x0: number; x1: number }[] {
  const ivs = rows.flat().map((s) => ({ x0: s.box.x, x1: right(s.box) })).sort((a, b) => a.x0 - b.x0);
  const cols: { x0: number; x1: number }[] = [];
  for (const iv of ivs) {
    const last = cols[cols.length - 1];
    if (last && iv.x0 <= last.x1 + 1) last.x1 = Math.max(last.x1, iv.x1);
    else cols.push({ ...iv });
  }
  return cols;
}

function findTables(segs: Seg[], page: number, body: number): { tables: { el: DocElement; segs: Set<Seg> }[] } {
  const rows = rowsOf(segs);
  const tables: { el: DocElement; segs: Set<Seg> }[] = [];
  const wordsPer = (r: Seg[]) => r.reduce((s, x) => s + x.words.length, 0) / r.length;
  let i = 0;
  while (i < rows.length) {
    if (rows[i]!.length < 2) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < rows.length && rows[j]!.length >= 2) {
      const prev = rows[j - 1]!, cur = rows[j]!;
      const gap = Math.min(...cur.map((s) => s.box.y)) - Math.max(...prev.map((s) => bottom(s.box)));
      if (gap > Math.max(body, 6) * 2.5) break;
      const cols = columnsOf(rows.slice(i, j + 1));
      if (cols.length < 2) break;
      j++;
    }
    const run = rows.slice(i, j);
    const cols = columnsOf(run);
    const avgWords = run.reduce((s, r) => s + wordsPer(r), 0) / run.length;
    const longest = Math.max(...run.flat().map((s) => s.words.length));
    // columns of running text look like a two-column table; their lines fill the column width
    const segsOfRun = run.flat();
    const filling = segsOfRun.filter((sg) => {
      const c = cols.find((cc) => sg.box.x >= cc.x0 - 1 && sg.box.x <= cc.x1);
      return c && sg.box.width >= (c.x1 - c.x0) * 0.8;
    }).length;
    // ... and they continue above or below it: a line of five or more words right next to the run, starting
    // where one of its columns starts, means the run is a few lines of side-by-side columns of text
    const inRun = new Set(segsOfRun);
    const top = Math.min(...segsOfRun.map((sg) => sg.box.y)), foot = Math.max(...segsOfRun.map((sg) => bottom(sg.box)));
    const lead = Math.max(body, 6) * 0.8;
    const continues = segs.some((sg) =>
      !inRun.has(sg) && sg.words.length >= 5 && cols.some((c) => Math.abs(sg.box.x - c.x0) <= 3) &&
      ((top - bottom(sg.box) >= -1 && top - bottom(sg.box) < lead) || (sg.box.y - foot >= -1 && sg.box.y - foot < lead))
    );
    const prose = (avgWords >= 3 && filling >= segsOfRun.length * 0.6) || continues;
    if (run.length >= 2 && cols.length >= 2 && avgWords <= 5 && longest <= 12 && !prose) {
      const cells: TableCell[] = [];
      run.forEach((r, ri) => {
        for (const s of r) {
          const ci = cols.findIndex((c) => s.box.x >= c.x0 - 1 && s.box.x <= c.x1);
          const at = cells.find((c) => c.row === ri && c.col === ci);
          if (at) {
            at.text += ` ${s.text}`;
            at.bbox = unionBox([at.bbox!, s.box]);
          } else cells.push({ row: ri, col: ci, text: s.text, bbox: s.box, header: ri === 0 });
        }
      });
      const set = new Set(run.flat());
      const box = unionBox([...set].map((s) => s.box));
      const grid = run.map((_, ri) => cols.map((__, ci) => cells.find((c) => c.row === ri && c.col === ci)?.text ?? ''));
      tables.push({
        el: {
          type: 'table',
          text: grid.map((r) => r.join(' | ')).join('\n'),
          page,
          bbox: box,
          rows: run.length,
          cols: cols.length,
          cells: cells.sort((a, b) => a.row - b.row || a.col - b.col),
        },
        segs: set,
      });
      i = j;
    } else i++;
  }
  return { tables };
}

// ---------------------------------------------------------------- 4. reading order

function gutters(units: Unit[], minGap: number): number[] {
  const ivs = units.map((u) => [u.box.x, right(u.box)] as const).sort((a, b) => a[0] - b[0]);
  const cuts: number[] = [];
  let reach = ivs[0]![1];
  for (let k = 1; k < ivs.length; k++) {
    const [x0, x1] = ivs[k]!;
    if (x0 - reach >= minGap) cuts.push((x0 + reach) / 2);
    reach = Math.max(reach, x1);
  }
  return cuts;
}

function order(units: Unit[], minGap: number, depth = 0): Unit[] {
  if (units.length <= 1 || depth > 40) return units;
  const cuts = gutters(units, minGap);
  if (cuts.length) {
    const cols: Unit[][] = Array.from({ length: cuts.length + 1 }, () => []);
    for (const u of units) {
      const cx = u.box.x + u.box.width / 2;
      let k = 0;
      while (k < cuts.length && cx > cuts[k]!) k++;
      cols[k]!.push(u);
    }
    return cols.flatMap((c) => order(c, minGap, depth + 1));
  }
  // horizontal strips
  const sorted = [...units].sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x);
  const strips: Unit[][] = [];
  let reach = -Infinity;
  for (const u of sorted) {
    const tol = Math.min(u.box.height, 6) * 0.3;
    if (!strips.length || u.box.y >= reach - tol) {
      strips.push([u]);
      reach = bottom(u.box);
    } else {
      strips[strips.length - 1]!.push(u);
      reach = Math.max(reach, bottom(u.box));
    }
  }
  if (strips.length === 1) return sorted; // overlapping in both directions: top-to-bottom
  const groups: Unit[][] = [];
  let prevBottom = -Infinity;
  for (const s of strips) {
    const g = groups[groups.length - 1];
    const top = Math.min(...s.map((u) => u.box.y));
    const close = top - prevBottom < minGap * 2.5; // a wide vertical gap ends a multi-column section
    if (g && close && gutters([...g, ...s], minGap).length && (gutters(g, minGap).length || gutters(s, minGap).length)) g.push(...s);
    else groups.push([...s]);
    prevBottom = Math.max(...s.map((u) => bottom(u.box)));
  }
  return groups.flatMap((
    g,
  ) => (g.length === units.length ? g.sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x) : order(g, minGap, depth + 1)));
}

// ---------------------------------------------------------------- 5 & 6. blocks and types

interface Block {
  segs: Seg[];
  list: { marker: string; ordered: boolean } | null;
}

/** OCR often reads a bullet as another lone symbol (», ©, ., °): any lone symbol before text counts there. */
const OCR_BULLET = /^([^\p{L}\p{N}\s(])(\s+)(?=\p{L})/u;

function listMarker(text: string, ocr = false): { marker: string; ordered: boolean } | null {
  if (ocr) {
    const o = OCR_BULLET.exec(text);
    if (o) return { marker: o[1]!, ordered: false };
  }
  const b = BULLET.exec(text);
  if (b && text.length > b[0].length) return { marker: b[1]!, ordered: false };
  const e = ENUM.exec(text);
  if (e && text.length > e[0].length && !/^\d+\.\d/.test(text)) return { marker: e[1]!, ordered: true };
  return null;
}

function blocksOf(segs: Seg[], body: number): Block[] {
  const blocks: Block[] = [];
  for (const s of segs) {
    const cur = blocks[blocks.length - 1];
    const last = cur?.segs[cur.segs.length - 1];
    const marker = s.mono ? null : listMarker(s.text, s.words[0]?.font === undefined);
    let join = false;
    if (cur && last && (s.mono || last.mono)) {
      // a code block: monospaced lines that follow each other, blank lines inside allowed
      const gap = s.box.y - bottom(last.box);
      join = s.mono && last.mono && gap > -last.box.height * 0.5 && gap < Math.max(last.box.height, 4) * 2.6 &&
        (s.words[0]?.font === undefined || Math.abs(s.size - last.size) <= 0.6); // OCR sizes come from ink heights
    } else if (cur && last && !marker) {
      const gap = s.box.y - bottom(last.box);
      const tol = s.words[0]?.font === undefined ? 0.15 : 0.08; // OCR sizes are estimates
      const sameStyle = Math.abs(s.size - last.size) <= Math.max(0.6, last.size * tol) && s.bold === last.bold;
      const overlapX = Math.min(right(s.box), right(last.box)) - Math.max(s.box.x, last.box.x) > 0;
      const lineGap = gap > -last.box.height * 0.5 && gap < Math.max(last.size, body) * 0.75;
      const listCont = !cur.list || s.box.x > cur.segs[0]!.box.x + 2;
      join = sameStyle && overlapX && lineGap && listCont;
    }
    if (join) cur!.segs.push(s);
    else blocks.push({ segs: [s], list: marker });
  }
  return blocks;
}

/**
 * Lists whose bullets are drawn as shapes (no marker in the text layer): a block indented from the
 * paragraph before it in the same column, none of whose lines reaches that paragraph's right edge, is a
 * list; each of its lines that starts with a capital (or digit) starts an item.
 */
function splitGraphicLists(blocks: Block[], body: number, last: { para: { x0: number; x1: number } | null }): Block[] {
  const out: Block[] = [];
  let para = last.para;
  const em = Math.max(body, 6);
  for (const b of blocks) {
    const x0 = Math.min(...b.segs.map((s) => s.box.x)), x1 = Math.max(...b.segs.map((s) => right(s.box)));
    const plain = !b.list && !b.segs.some((s) => s.mono) && b.segs.every((s) => Math.abs(s.size - body) <= 0.6 && !s.bold);
    if (plain && para && b.segs.length >= 2 && x0 >= para.x0 + em * 1.2 && x0 < para.x0 + em * 6 && x1 < para.x1 - em * 2) {
      for (const s of b.segs) {
        const last = out[out.length - 1];
        if (/^[\p{Lu}\p{N}]/u.test(s.text) || !last?.list) out.push({ segs: [s], list: { marker: '•', ordered: false } });
        else last.segs.push(s);
      }
      continue;
    }
    if (plain && b.segs.length >= 2) para = { x0, x1 };
    out.push(b);
  }
  last.para = para;
  return out;
}

/**
 * Lines of a block joined with spaces. A hyphen that ends a line before a lowercase word is taken out
 * (hyphenation), unless the document also writes that word with its hyphen inside a line ("machine-readable").
 */
function joinLines(segs: Seg[], hyphenated: Set<string>): string {
  let text = '';
  for (const s of segs) {
    const t = s.text.trim();
    if (!text) text = t;
    else if (/[\p{L}]-$/u.test(text) && /^\p{Ll}/u.test(t)) {
      const head = /[\p{L}-]+-$/u.exec(text)![0], tail = /^[\p{L}-]+/u.exec(t)![0];
      text = hyphenated.has(`${head}${tail}`.toLowerCase()) ? text + t : text.slice(0, -1) + t;
    } else text += ` ${t}`;
  }
  return text;
}

/** A code block's text: one line per segment, indentation from its offset in character widths, blank lines kept. */
function codeText(segs: Seg[]): string {
  const x0 = Math.min(...segs.map((s) => s.box.x));
  // the character pitch: a word's ink is its advances less about half a character of side bearings
  const long = segs.flatMap((s) => s.words).filter((w) => [...w.text].length >= 3);
  const widths = (long.length ? long : segs.flatMap((s) => s.words)).map((w) => w.box.width / Math.max(1, [...w.text].length - 0.4)).sort((
    a,
    b,
  ) => a - b);
  const cw = widths[widths.length >> 1] || 1;
  const lines: string[] = [];
  segs.forEach((s, i) => {
    const prev = segs[i - 1];
    if (prev && s.box.y - bottom(prev.box) > prev.box.height * 0.8) lines.push('');
    // words of a code line keep their spacing: gaps wider than one character become runs of spaces
    let line = ' '.repeat(Math.max(0, Math.round((s.box.x - x0) / cw)));
    s.words.forEach((w, k) => {
      if (k) line += ' '.repeat(Math.max(1, Math.round((w.box.x - right(s.words[k - 1]!.box)) / cw - 0.4))); // less the side bearings
      line += w.text;
    });
    lines.push(line);
  });
  return lines.join('\n');
}

/** The language of a code block when it is evident from its first lines. */
function codeLanguage(code: string): string | undefined {
  if (/^\$ \S/m.test(code) && code.split('\n').every((l) => !l.trim() || /^\$ /.test(l) || !/[;{}]$/.test(l))) return 'console';
  if (/^#include\s*[<"]|\bint main\s*\(/m.test(code)) return 'c';
  if (/^(def |import |from \S+ import )/m.test(code) && !/[;{]$/m.test(code)) return 'python';
  if (/\b(const|let|function)\b.*[=({]/.test(code) && /[;{}]$/m.test(code)) return 'javascript';
  return undefined;
}

const MATH = /[=∑∫√±×÷≤≥≈≠∞∂∇∈∉⊂⊆∀∃→⇒αβγδεθλμπσφωΣΠΔΩ^]/gu;
function isFormula(text: string): boolean {
  if (text.length > 120 || !/[=≤≥≈<>]/.test(text)) return false;
  const math = (text.match(MATH) ?? []).length;
  const words = text.split(/\s+/).filter((w) => /^\p{L}{3,}$/u.test(w)).length;
  return math >= 2 && words <= 3;
}

/** A section number that opens a heading: "2", "2.", "2.1", "2.1.3", "A.2" (then a space and a capital). */
const SECTION_NUMBER = /^((?:\d{1,2}(?:\.\d{1,2}){0,4}|[A-Z](?:\.\d{1,2}){1,4})\.?)\s+\p{Lu}/u;
/** One to four people's names ("Ada Lovelace", "J. R. Smith and Mary Jones"). */
const PERSON_NAMES =
  /^(\p{Lu}[\p{Ll}'’-]*\.?(\s+\p{Lu}[\p{Ll}'’-]*\.?){1,3})(\s*(,|and|&)\s*\p{Lu}[\p{Ll}'’-]*\.?(\s+\p{Lu}[\p{Ll}'’-]*\.?){1,3}){0,3}$/u;
const mode = (xs: number[]) => {
  const c = new Map<number, number>();
  for (const x of xs) c.set(x, (c.get(x) ?? 0) + 1);
  return [...c.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0];
};

const CAPTION = /^(fig(ure)?|image|chart|plate|table|tab)\.?\s*[\dIVX]+[a-z]?\s*[.:—–-]?/i;

/** Analyses pages of positioned text into typed elements in reading order. */
export function analyseLayout(pages: InPage[]): { elements: DocElement[]; pages: PageMeta[] } {
  const segsByPage = pages.map(segmentsOf);
  // body size: the most common size, by characters
  const bySize = new Map<number, number>();
  for (const s of segsByPage.flat()) bySize.set(Math.round(s.size * 2) / 2, (bySize.get(Math.round(s.size * 2) / 2) ?? 0) + s.chars);
  const body = [...bySize.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 10;
  const marginal = markMargins(pages, segsByPage);
  const hyphenated = new Set(
    segsByPage.flat().flatMap((s) => s.words.map((w) => w.text.toLowerCase().replace(/^[^\p{L}]+|[^\p{L}]+$/gu, ''))).filter((w) =>
      /\p{L}-\p{L}/u.test(w)
    ),
  );

  interface Pending {
    el: DocElement;
    size: number;
    bold: boolean;
    headingCandidate: boolean;
  }
  const pending: Pending[] = [];
  const lastPara: { para: { x0: number; x1: number } | null } = { para: null }; // the paragraph before, across pages
  pages.forEach((p, pi) => {
    const segs = segsByPage[pi]!;
    const margins = segs.filter((s) => marginal.has(s));
    const rest = segs.filter((s) => !marginal.has(s));
    const { tables } = findTables(rest, p.page, body);
    const inTable = new Set(tables.flatMap((t) => [...t.segs]));
    const units: Unit[] = [
      ...rest.filter((s) => !inTable.has(s)).map((s): Unit => ({ kind: 'seg', seg: s, box: s.box })),
      ...tables.map((t): Unit => ({ kind: 'table', el: t.el, box: t.el.bbox! })),
      ...p.images.filter((im) => im.box.width > 8 && im.box.height > 8).map((im): Unit => ({ kind: 'image', box: im.box })),
    ];
    const ordered = order(units, Math.max(body, 6) * 0.9);
    for (const m of margins.filter((s) => bottom(s.box) <= p.height * 0.5)) {
      pending.push({
        el: { type: 'page_header', text: m.text, page: p.page, bbox: m.box, source: p.source },
        size: m.size,
        bold: m.bold,
        headingCandidate: false,
      });
    }
    // runs of consecutive segments form blocks; tables and images stand alone
    let run: Seg[] = [];
    const flushRun = () => {
      for (const b of splitGraphicLists(blocksOf(run, body), body, lastPara)) {
        if (b.segs.every((s) => s.mono)) {
          const code = codeText(b.segs), language = codeLanguage(code);
          pending.push({
            el: {
              type: 'code',
              text: code,
              page: p.page,
              bbox: unionBox(b.segs.map((s) => s.box)),
              source: p.source,
              ...(language ? { language } : {}),
            },
            size: body,
            bold: false,
            headingCandidate: false,
          });
          continue;
        }
        const text = joinLines(b.segs, hyphenated);
        const size = Math.max(...b.segs.map((s) => s.size));
        const bold = b.segs.every((s) => s.bold);
        const el: DocElement = { type: 'paragraph', text, page: p.page, bbox: unionBox(b.segs.map((s) => s.box)), source: p.source };
        // "1. Introduction" set larger or bold is a numbered section heading, not an enumerated list item
        if (b.list?.ordered && b.segs.length <= 2 && (size >= body * 1.15 || bold) && SECTION_NUMBER.test(text)) b.list = null;
        if (b.list) {
          el.type = 'list_item';
          el.ordered = b.list.ordered;
          el.marker = b.list.marker;
          el.text = text.replace(b.list.ordered ? ENUM : BULLET, '').replace(OCR_BULLET, '').trim();
          if (!b.list.ordered) el.marker = '•';
        } else if (isFormula(text)) el.type = 'formula';
        const words = text.split(/\s+/).length;
        // OCR sizes and weights are estimates: there only a clearly larger line is a heading
        const ocr = p.source === 'ocr';
        const headingCandidate = !b.list && el.type === 'paragraph' && words <= 20 && b.segs.length <= 3 && !/[.:;,]$/.test(text) &&
          /\p{L}/u.test(text) &&
          (ocr ? size >= body * 1.25 || (SECTION_NUMBER.test(text) && size >= body * 1.1) : size >= body * 1.15 || (bold && words <= 12));
        pending.push({ el, size, bold, headingCandidate });
      }
      run = [];
    };
    for (const u of ordered) {
      if (u.kind === 'seg') {
        run.push(u.seg);
        continue;
      }
      flushRun();
      if (u.kind === 'table') pending.push({ el: u.el, size: body, bold: false, headingCandidate: false });
      else {pending.push({
          el: {
            type: 'figure',
            text: '',
            page: p.page,
            bbox: { x: r2(u.box.x), y: r2(u.box.y), width: r2(u.box.width), height: r2(u.box.height) },
            source: p.source,
          },
          size: body,
          bold: false,
          headingCandidate: false,
        });}
    }
    flushRun();
    for (const m of margins.filter((s) => bottom(s.box) > p.height * 0.5)) {
      pending.push({
        el: { type: 'page_footer', text: m.text, page: p.page, bbox: m.box, source: p.source },
        size: m.size,
        bold: m.bold,
        headingCandidate: false,
      });
    }
  });

  // heading levels by size (larger = higher), bold body-size headings last; then section numbering, where
  // present, decides: "2." and "2" are one level, "2.1" the next below, whatever sizes the author chose
  const headSizes = [...new Set(pending.filter((x) => x.headingCandidate).map((x) => Math.round(x.size * 2) / 2))].sort((a, b) => b - a);
  const firstPage = pages[0]?.page;
  const titleSize = headSizes[0];
  let titled = false;
  for (const x of pending) {
    if (!x.headingCandidate) continue;
    const sz = Math.round(x.size * 2) / 2;
    const rank = headSizes.indexOf(sz);
    if (!titled && x.el.page === firstPage && sz === titleSize && headSizes.length > 1 && sz >= body * 1.3) {
      x.el.type = 'title';
      x.el.level = 1;
      titled = true;
      continue;
    }
    x.el.type = 'section_header';
    x.el.level = Math.min(6, 2 + rank - (titleSize !== undefined && headSizes.length > 1 && titleSize >= body * 1.3 && rank > 0 ? 1 : 0));
  }

  const numbered = pending.filter((x) => x.el.type === 'section_header' && SECTION_NUMBER.test(x.el.text));
  if (numbered.length >= 2) {
    // between the title and the first numbered section, a short run of capitalised names is a byline
    for (const x of pending) {
      if (x === numbered[0]) break;
      if (x.el.type === 'section_header' && x.el.page === firstPage && PERSON_NAMES.test(x.el.text)) {
        x.el.type = 'paragraph';
        delete x.el.level;
      }
    }
    const depth = (t: string) => SECTION_NUMBER.exec(t)![1]!.split('.').filter(Boolean).length;
    // the level the author's top-level sections got from their size (the most common among depth 1)
    const tops = numbered.filter((x) => depth(x.el.text) === 1).map((x) => x.el.level!);
    const base = tops.length ? mode(tops) : Math.max(2, mode(numbered.map((x) => x.el.level! - depth(x.el.text) + 1)));
    for (const x of numbered) x.el.level = Math.min(6, base + depth(x.el.text) - 1);
  }

  // a paragraph cut by a page or column break continues on the next page or column: it ends without closing
  // punctuation and the next element is a paragraph of the same size that starts in lowercase
  const joined: Pending[] = [];
  let open: Pending | null = null;
  for (const x of pending) {
    if (x.el.type === 'page_header' || x.el.type === 'page_footer') {
      joined.push(x);
      continue;
    }
    const moved = open &&
      (x.el.page !== open.el.page ||
        (x.el.bbox && open.el.bbox && (x.el.bbox.y < open.el.bbox.y || Math.abs(x.el.bbox.x - open.el.bbox.x) > open.el.bbox.width * 0.5)));
    if (
      open && moved && x.el.type === 'paragraph' && Math.abs(x.size - open.size) <= 0.6 && !/[.!?:;]["”’)]?$/.test(open.el.text) &&
      /^[\p{Ll}\p{N}(]/u.test(x.el.text)
    ) {
      open.el.text = joinLines([{ text: open.el.text } as Seg, { text: x.el.text } as Seg], hyphenated);
      continue;
    }
    open = x.el.type === 'paragraph' ? x : null;
    joined.push(x);
  }
  pending.splice(0, pending.length, ...joined);

  // captions next to figures and tables
  const elements = pending.map((x) => x.el);
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i]!;
    if (e.type !== 'figure' && e.type !== 'table') continue;
    const near = (c: DocElement | undefined) =>
      c && c.page === e.page && (c.type === 'paragraph' || c.type === 'section_header') && CAPTION.test(c.text) && c.bbox && e.bbox &&
      Math.min(Math.abs(c.bbox.y - bottom(e.bbox)), Math.abs(e.bbox.y - bottom(c.bbox))) < body * 3;
    const after = elements[i + 1], before = elements[i - 1];
    const cap = near(after) ? after! : near(before) ? before! : undefined;
    if (!cap) continue;
    cap.type = 'caption';
    delete cap.level;
    e.caption = cap.text;
  }
  const meta: PageMeta[] = pages.map((p) => ({
    page: p.page,
    width: p.width,
    height: p.height,
    source: p.source,
    ...(p.rotation !== undefined ? { rotation: p.rotation, deskew: p.deskew ?? 0 } : {}),
  }));
  return { elements, pages: meta };
}
