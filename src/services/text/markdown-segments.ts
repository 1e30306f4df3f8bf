/**
 * Markdown cut into what a translator must translate and what it must keep: code blocks, blank lines,
 * rules and each line's block markup (heading marks, list bullets and numbers, task boxes, quote marks,
 * table pipes) stay as they are; inline code and link targets inside a text are replaced by numbered
 * placeholders and put back afterwards. Reassembling with the same texts gives the input back exactly.
 */
export interface MarkdownSegments {
  /** Texts to translate, in order. */
  texts: string[];
  /** Rebuilds the document from translated texts (same count and order). */
  assemble(translated: string[]): string;
}

const PREFIX = /^(\s*(?:>\s?)*(?:#{1,6}\s+|[-*+]\s+(?:\[[ xX]\]\s+)?|\d{1,9}[.)]\s+)?)/;
const FENCE = /^\s*(```|~~~)/;
const RULE = /^\s*(?:[-*_]\s*){3,}$/;
const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
const PROTECT = /`[^`\n]+`|\]\([^)\s]+(?:\s+"[^"]*")?\)|<https?:[^>\s]+>|https?:\/\/[^\s)>\]]+/g;

export function markdownSegments(md: string): MarkdownSegments {
  const parts: (string | { text: number; keep: string[] })[] = [];
  const texts: string[] = [];
  const addText = (t: string) => {
    const keep: string[] = [];
    const masked = t.replace(PROTECT, (m) => `⟦${keep.push(m) - 1}⟧`);
    texts.push(masked);
    parts.push({ text: texts.length - 1, keep });
  };
  let inFence = false;
  const lines = md.split('\n');
  lines.forEach((line, li) => {
    const nl = li < lines.length - 1 ? '\n' : '';
    if (FENCE.test(line)) inFence = !inFence;
    if (inFence || FENCE.test(line) || !line.trim() || RULE.test(line) || TABLE_RULE.test(line)) return parts.push(line + nl);
    if (/^\s*\|/.test(line)) {
      // table row: each cell's text
      const cells = line.split(/(?<!\\)\|/);
      cells.forEach((cell, i) => {
        const lead = cell.match(/^\s*/)![0];
        const trail = cell.match(/\s*$/)![0];
        const body = cell.slice(lead.length, cell.length - trail.length);
        if (i) parts.push('|');
        parts.push(lead);
        if (body) addText(body);
        parts.push(trail);
      });
      return parts.push(nl);
    }
    const prefix = line.match(PREFIX)![1]!;
    const body = line.slice(prefix.length);
    const trail = body.match(/\s*$/)![0];
    parts.push(prefix);
    addText(body.slice(0, body.length - trail.length));
    parts.push(trail + nl);
  });
  return {
    texts,
    assemble(translated) {
      return parts.map((p) => {
        if (typeof p === 'string') return p;
        const t = (translated[p.text] ?? texts[p.text]!).replace(/\s*\n\s*/g, ' ');
        return t.replace(/⟦(\d+)⟧/g, (m, i) => p.keep[Number(i)] ?? m);
      }).join('');
    },
  };
}
