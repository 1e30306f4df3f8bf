/**
 * Markdown (what the converters of formats without pages produce) back into typed elements, so parsing,
 * splitting and highlighting treat every format alike. Such elements have no page and no box.
 */
import type { DocElement, TableCell } from './elements.ts';

const splitRow = (line: string) => {
  const cells: string[] = [];
  let cur = '';
  const body = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '\\' && body[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (body[i] === '|') {
      cells.push(cur.trim());
      cur = '';
    } else cur += body[i];
  }
  cells.push(cur.trim());
  return cells;
};
const isRule = (l: string) => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(l);

export function markdownToElements(md: string): DocElement[] {
  const lines = md.replace(/\r\n/g, '\n').split('\n');
  const out: DocElement[] = [];
  let para: string[] = [];
  let titled = false;
  const base = { page: null, bbox: null } as const;
  const flush = () => {
    const text = para.join(' ').replace(/\s+/g, ' ').trim();
    if (text) out.push({ ...base, type: /^\*[^*].*\*$/.test(text) ? 'caption' : 'paragraph', text: text.replace(/^\*(.*)\*$/, '$1') });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (!l.trim()) {
      flush();
      continue;
    }
    const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(l);
    if (h) {
      flush();
      const level = h[1]!.length;
      if (level === 1 && !titled) {
        out.push({ ...base, type: 'title', text: h[2]!, level: 1 });
        titled = true;
      } else out.push({ ...base, type: 'section_header', text: h[2]!, level: Math.max(2, level) });
      continue;
    }
    if (/^\s*\|/.test(l) && i + 1 < lines.length && isRule(lines[i + 1]!)) {
      flush();
      const rows: string[][] = [splitRow(l)];
      i += 2;
      while (i < lines.length && /^\s*\|/.test(lines[i]!)) rows.push(splitRow(lines[i++]!));
      i--;
      const cols = Math.max(...rows.map((r) => r.length));
      const cells: TableCell[] = rows.flatMap((r, ri) => r.map((text, ci) => ({ row: ri, col: ci, text, bbox: null, header: ri === 0 })));
      out.push({ ...base, type: 'table', text: rows.map((r) => r.join(' | ')).join('\n'), rows: rows.length, cols, cells });
      continue;
    }
    const li = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/.exec(l);
    if (li) {
      flush();
      const ordered = /\d/.test(li[2]!);
      out.push({ ...base, type: 'list_item', text: li[3]!.trim(), ordered, marker: li[2]! });
      continue;
    }
    if (/^```|^~~~/.test(l)) {
      flush();
      const fence = l.trim().slice(0, 3);
      const language = l.trim().slice(3).trim().split(/\s/)[0];
      const code: string[] = [];
      while (++i < lines.length && !lines[i]!.trim().startsWith(fence)) code.push(lines[i]!);
      out.push({ ...base, type: 'code', text: code.join('\n'), ...(language ? { language } : {}) });
      continue;
    }
    if (/^\$\$/.test(l.trim())) {
      flush();
      const f: string[] = [l.trim().replace(/^\$\$/, '').replace(/\$\$$/, '')];
      if (!(l.trim().length > 2 && l.trim().endsWith('$$'))) {
        while (++i < lines.length && !lines[i]!.trim().startsWith('$$')) f.push(lines[i]!);
      }
      out.push({ ...base, type: 'formula', text: f.join('\n').trim() });
      continue;
    }
    if (/^!\[[^\]]*\]\([^)]*\)\s*$/.test(l.trim()) || l.trim() === '<!-- image -->') {
      flush();
      const alt = /^!\[([^\]]*)\]/.exec(l.trim())?.[1] ?? '';
      out.push({ ...base, type: 'figure', text: '', ...(alt ? { caption: alt } : {}) });
      continue;
    }
    if (para.length && /^(-{3,}|\*{3,}|_{3,})\s*$/.test(l.trim())) {
      flush();
      continue;
    }
    para.push(l.replace(/^>\s?/, '').replace(/\s{2,}$/, ''));
  }
  flush();
  return out;
}
