/** Bundle several outputs into one zip (split, to-images); stored, not deflated: PDFs and images are already compressed. */
import { zipSync } from 'fflate';

export function zipFiles(files: { name: string; bytes: Uint8Array }[]): Uint8Array {
  const entries: Record<string, [Uint8Array, { level: 0 }]> = {};
  for (const f of files) entries[f.name] = [f.bytes, { level: 0 }];
  return zipSync(entries);
}

/** Names like part-001.pdf, page-007.png, padded so they sort. */
export function numberedNames(count: number, prefix: string, ext: string, numbers?: number[]): string[] {
  const width = Math.max(3, String(count).length);
  return [...Array(count).keys()].map((i) => `${prefix}-${String(numbers ? numbers[i] : i + 1).padStart(width, '0')}.${ext}`);
}
