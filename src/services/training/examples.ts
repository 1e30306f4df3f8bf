/**
 * Labelled examples for training: from a JSON array of `{text, label}`, or from a file (CSV with a header
 * row, parsed by csv-parse; JSONL, one object per line; or a JSON array). Column / key names are chosen by
 * the caller. Every bad row is a 400 naming its line; nothing is guessed.
 */
import { parse } from 'csv-parse/sync';
import { invalidArgument } from '../errors.ts';
import { seededRandom } from '../inference/sampling.ts';

export interface Example {
  text: string;
  label: string;
}

export interface ExampleColumns {
  text: string;
  label: string;
}

const bad = (field: string, message: string) => invalidArgument(`${field}: ${message}`, [{ field, message }]);

function fromObject(o: unknown, where: string, cols: ExampleColumns): Example {
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw bad(where, 'must be an object');
  const r = o as Record<string, unknown>;
  const text = r[cols.text];
  let label = r[cols.label];
  if (typeof label === 'number' || typeof label === 'boolean') label = String(label);
  if (typeof text !== 'string' || !text.trim()) throw bad(`${where}.${cols.text}`, 'must be a non-empty string');
  if (typeof label !== 'string' || !label.trim()) throw bad(`${where}.${cols.label}`, 'must be a non-empty string');
  return { text, label: label.trim() };
}

export function examplesFromJson(v: unknown, cols: ExampleColumns, field = 'examples'): Example[] {
  if (!Array.isArray(v)) throw bad(field, 'must be an array of objects');
  return v.map((o, i) => fromObject(o, `${field}.${i}`, cols));
}

export type ExampleFormat = 'csv' | 'jsonl' | 'json';

/** The format of an examples file: from its name, else from its first character. */
export function formatOf(filename: string, text: string): ExampleFormat {
  const ext = /\.([a-z]+)$/i.exec(filename)?.[1]?.toLowerCase();
  if (ext === 'csv' || ext === 'tsv') return 'csv';
  if (ext === 'jsonl' || ext === 'ndjson') return 'jsonl';
  if (ext === 'json') return 'json';
  const t = text.trimStart();
  if (t.startsWith('[')) return 'json';
  if (t.startsWith('{')) return 'jsonl';
  return 'csv';
}

export function examplesFromFile(bytes: Uint8Array, filename: string, cols: ExampleColumns, format?: ExampleFormat): Example[] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    throw bad('file', 'is not UTF-8 text');
  }
  const f = format ?? formatOf(filename, text);
  if (f === 'json') {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw bad('file', 'is not valid JSON');
    }
    return examplesFromJson(v, cols, 'file');
  }
  if (f === 'jsonl') {
    const out: Example[] = [];
    text.split(/\r?\n/).forEach((line, i) => {
      if (!line.trim()) return;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        throw bad(`file line ${i + 1}`, 'is not valid JSON');
      }
      out.push(fromObject(v, `file line ${i + 1}`, cols));
    });
    return out;
  }
  let rows: Record<string, string>[];
  try {
    rows = parse(text, { columns: true, skip_empty_lines: true, trim: true, bom: true, delimiter: /\.tsv$/i.test(filename) ? '\t' : ',' });
  } catch (e) {
    throw bad('file', `is not valid CSV (${(e as Error).message})`);
  }
  if (rows.length && !(cols.text in rows[0] && cols.label in rows[0])) {
    throw bad('file', `the CSV header must name the columns "${cols.text}" and "${cols.label}" (text_column, label_column)`);
  }
  return rows.map((r, i) => fromObject(r, `file row ${i + 2}`, cols));
}

/**
 * A stratified held-out split: each label keeps `testFraction` of its examples (at least one when it has
 * two or more), picked by a seeded shuffle, so the same request splits the same way.
 */
export function stratifiedSplit(examples: Example[], testFraction: number, seed: number): { train: Example[]; test: Example[] } {
  const rand = seededRandom(seed ^ 0x5bd1e995);
  const byLabel = new Map<string, Example[]>();
  for (const e of examples) (byLabel.get(e.label) ?? byLabel.set(e.label, []).get(e.label)!).push(e);
  const train: Example[] = [];
  const test: Example[] = [];
  for (const group of byLabel.values()) {
    const g = [...group];
    for (let i = g.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [g[i], g[j]] = [g[j], g[i]];
    }
    const n = testFraction > 0 && g.length >= 2 ? Math.max(1, Math.round(g.length * testFraction)) : 0;
    test.push(...g.slice(0, n));
    train.push(...g.slice(n));
  }
  return { train, test };
}
