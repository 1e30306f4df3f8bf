/**
 * The RFC 3161 query svc sends to a TSA, judged by OpenSSL's strict DER decoder: every nonce drawn from the
 * random source must give a query OpenSSL reads (a leading zero byte in the nonce made one query in 256 unreadable).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { nonceOf, timestampQuery } from '../../../src/services/pdf/trust/tsa.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-tsq-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');

function opensslReads(query: Uint8Array): string {
  const f = join(dir, 'q.tsq');
  writeFileSync(f, query);
  return execFileSync('openssl', ['ts', '-query', '-in', f, '-text'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

test('queries with the random bytes that used to give non-DER nonces are read by openssl ts, nonce and digest intact', () => {
  const digest = new Uint8Array(32).map((_, i) => i * 7);
  const draws = [
    [0x00, 0x05, 1, 2, 3, 4, 5, 6], // 0x00 then a byte below 0x80: the encoding OpenSSL refused
    [0x80, 0x00, 0, 0, 0, 0, 0, 1], // top bit set: would read as negative
    [0x00, 0x00, 0, 0, 0, 0, 0, 0],
    [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
    [0x7f, 0x80, 0, 0, 0, 0, 0, 0],
  ];
  for (const draw of draws) {
    const nonce = nonceOf(new Uint8Array(draw));
    const text = opensslReads(timestampQuery('SHA-256', digest, nonce));
    const printed = /Nonce: 0x([0-9A-F]+)/i.exec(text)?.[1];
    assert.equal(printed?.toLowerCase(), hex(nonce), `${hex(new Uint8Array(draw))} → ${text}`);
    assert.match(text.replace(/[\s:-]/g, '').toLowerCase(), new RegExp(hex(digest).slice(0, 32)));
  }
});
