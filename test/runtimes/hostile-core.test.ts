/**
 * The core of the hostile corpus on each runtime's own server (the README's start commands): the worker
 * pool runs there too (worker_threads on Node, Web Workers on Deno and Bun), so bombs land on their named
 * limits, a trap-prone input never breaks later requests, and /health answers throughout.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { buildBundle, ONE_PAGE_PDF, ROOT, RUNTIMES, start } from '../support/runtime-process.ts';

const hostile = (n: string) => readFileSync(join(ROOT, 'test/fixtures/hostile', n)).toString('base64');
const PDF = Buffer.from(ONE_PAGE_PDF).toString('base64');

// [route, body, expected status, expected reason]
const CASES: [string, Record<string, unknown>, number, string | null][] = [
  ['pdf-info', { file: hostile('flate-bomb.pdf') }, 422, 'decompressed_size_limit_exceeded'],
  ['pdf-to-images', { file: hostile('huge-image.pdf') }, 413, 'input_too_large'],
  ['image-to-pdf', { file: hostile('pixel-bomb.png') }, 413, 'input_too_large'],
  ['pdf-watermark', { file: PDF, logo: hostile('pixel-bomb.png') }, 413, 'input_too_large'],
  ['pdf-unlock', { file: PDF, password: 'x'.repeat(66_000) }, 413, 'field_too_long'],
  ['pdf-info', { file: hostile('truncated.pdf') }, 0, null],
  ['pdf-info', { file: hostile('recursive-pages.pdf') }, 0, null],
  ['pdf-info', { file: hostile('trailing-junk.pdf') }, 0, null],
  ['document-to-markdown', { file: hostile('postscript.ps') }, 415, 'unsupported_file_type'],
  ['pdf-info', { file: PDF }, 200, null],
];

describe('hostile-corpus core on Node, Deno and Bun', () => {
  before(buildBundle);
  for (const [name, cmd] of Object.entries(RUNTIMES)) {
    test(name, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), `svc-hostile-${name}-`));
      const [c, a] = cmd(['--port', '0', '--data-dir', dataDir]);
      const srv = await start(c, a);
      let stop = false;
      const health: number[] = [];
      const monitor = (async () => {
        while (!stop) {
          const t = performance.now();
          assert.equal((await fetch(`${srv.url}/health`)).status, 200);
          health.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 25));
        }
      })();
      try {
        assert.equal(srv.runtime, name);
        for (const [route, body, status, reason] of CASES) {
          const r = await fetch(`${srv.url}/svc/v1/${route}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ input_format: 'Base64EncodedFile', ...body }),
            signal: AbortSignal.timeout(60_000),
          });
          const text = await r.text();
          assert.ok(r.status < 500, `${name} ${route}: ${r.status} ${text.slice(0, 200)}`);
          if (status) assert.equal(r.status, status, `${name} ${route}: ${text.slice(0, 200)}`);
          if (reason) assert.equal(JSON.parse(text).error, reason);
        }
      } finally {
        stop = true;
        await monitor.catch(() => {});
        await srv.stop();
      }
      const sorted = [...health].sort((x, y) => x - y);
      const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0;
      assert.ok(p99 < 250, `${name} /health p99 ${p99.toFixed(1)} ms over ${health.length} samples`);
    });
  }
});
