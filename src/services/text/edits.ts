/** The edits that turn one text into another, as spans of the original (word-level diff, jsdiff). */
import { diffWordsWithSpace } from 'diff';

export interface Edit {
  start: number;
  end: number;
  original: string;
  replacement: string;
  type: 'replace' | 'insert' | 'delete';
}

export function textEdits(original: string, corrected: string): Edit[] {
  const edits: Edit[] = [];
  let at = 0;
  let pending: Edit | null = null;
  const flush = () => {
    if (pending) edits.push(pending), (pending = null);
  };
  for (const part of diffWordsWithSpace(original, corrected)) {
    if (!part.added && !part.removed) {
      flush();
      at += part.value.length;
      continue;
    }
    pending ??= { start: at, end: at, original: '', replacement: '', type: 'replace' };
    if (part.removed) {
      pending.original += part.value;
      pending.end = at + part.value.length;
      at += part.value.length;
    } else pending.replacement += part.value;
  }
  flush();
  for (const e of edits) e.type = e.original === '' ? 'insert' : e.replacement === '' ? 'delete' : 'replace';
  return edits;
}
