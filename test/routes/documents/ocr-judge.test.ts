/**
 * The tesseract CLI as an independent judge of OCR: on the same pages, each of our engines must read at
 * least as well as `tesseract <png> stdout` does (character error rate against the known text), and agree
 * with it on the words of a full rendered PDF page.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InProcess } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import { cer, PARAGRAPH, paragraphPng, post, twoColumnPdfLib } from './make-docs.ts';

let app: InProcess;
let dir: string;
documentsApp('svc-ocr-judge-', (a, d) => {
  app = a;
  dir = d;
});

const cli = (png: string) =>
  execFileSync('tesseract', [png, 'stdout', '-l', 'eng'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
const words = (s: string) => new Set(s.toLowerCase().match(/[a-z0-9]{3,}/g) ?? []);

async function ours(png: string, engine: string): Promise<string> {
  const res = await post(app.request, '/svc/v1/ocr', new Uint8Array(readFileSync(png)), 'page.png', { engine });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { text: string }).text;
}

for (const engine of ['tesseract', 'paddle'] as const) {
  test(`${engine}: reads a paragraph at least as well as the tesseract CLI on the same image`, async () => {
    const png = paragraphPng(dir);
    const judge = cer(cli(png), PARAGRAPH);
    assert.ok(judge < 0.05, `the judge itself reads the page (CER ${(judge * 100).toFixed(2)}%)`);
    const mine = cer(await ours(png, engine), PARAGRAPH);
    assert.ok(mine <= judge + 0.01, `${engine} CER ${(mine * 100).toFixed(2)}% against the CLI's ${(judge * 100).toFixed(2)}%`);
  });

  test(`${engine}: on a PDF page rendered by pdftoppm, finds the words the tesseract CLI finds`, async () => {
    const pdf = join(dir, 'two-col.pdf');
    writeFileSync(pdf, await twoColumnPdfLib(1));
    execFileSync('pdftoppm', ['-r', '200', '-f', '1', '-l', '1', '-gray', '-png', '-singlefile', pdf, join(dir, 'page')]);
    const png = join(dir, 'page.png');
    const judge = words(cli(png));
    assert.ok(judge.size > 60, `the judge reads the page (${judge.size} words)`);
    const mine = words(await ours(png, engine));
    const found = [...judge].filter((w) => mine.has(w)).length / judge.size;
    const extra = [...mine].filter((w) => !judge.has(w)).length / mine.size;
    assert.ok(
      found >= 0.95,
      `${engine} finds ${(found * 100).toFixed(1)}% of the CLI's words; missing: ${[...judge].filter((w) => !mine.has(w)).join(' ')}`,
    );
    assert.ok(
      extra <= 0.05,
      `${engine} reads ${(extra * 100).toFixed(1)}% words the CLI does not: ${[...mine].filter((w) => !judge.has(w)).join(' ')}`,
    );
  });
}
