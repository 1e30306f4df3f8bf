/**
 * Base64 task inputs decoded by the native codec: the bytes equal what coreutils' `base64 -d` and
 * `basenc --base64url -d` give (wrapped lines, URL-safe, no padding), and anything else is null (the
 * routes answer 400), on inputs made by coreutils' encoders.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { decodeBase64 } from '../../src/runtime/base64.ts';
import { inProcess, json } from '../support/server.ts';

const encode = (tool: string, args: string[], bytes: Uint8Array) => execFileSync(tool, args, { input: bytes }).toString('latin1');
const decodeWith = (tool: string, args: string[], text: string) => new Uint8Array(execFileSync(tool, [...args, '-d'], { input: text }));

describe('base64 inputs', () => {
  it('equal to coreutils on wrapped, unwrapped, URL-safe and unpadded text', () => {
    for (const n of [0, 1, 2, 3, 4, 5, 57, 1000, 300_001]) {
      const bytes = new Uint8Array(randomBytes(n));
      const wrapped = encode('base64', [], bytes); // 76 columns with newlines
      assert.deepEqual(decodeBase64(wrapped), decodeWith('base64', [], wrapped), `wrapped, ${n} bytes`);
      const flat = encode('base64', ['-w0'], bytes);
      assert.deepEqual(decodeBase64(flat), bytes, `one line, ${n} bytes`);
      const url = encode('basenc', ['--base64url', '-w0'], bytes);
      assert.deepEqual(decodeBase64(url), decodeWith('basenc', ['--base64url'], url), `URL-safe, ${n} bytes`);
      assert.deepEqual(decodeBase64(url.replace(/=+$/, '')), bytes, `URL-safe unpadded, ${n} bytes`);
    }
  });

  it('anything outside the alphabet, a lone last character or misplaced padding is not base64', () => {
    for (const bad of ['a', 'Y===', '====', 'Y!Q=', 'YWJ*', 'ÿÿÿÿ', '%%%not base64%%%', 'data:,YQ']) {
      assert.equal(decodeBase64(bad), null, bad);
      assert.throws(() => execFileSync('base64', ['-d'], { input: bad, stdio: 'pipe' }), Error, `coreutils accepts ${bad}`);
    }
    // padded groups run together: coreutils reads them, the Web's atob refuses them, and so do we
    assert.equal(decodeBase64('YQ==YQ=='), null);
    assert.throws(() => atob('YQ==YQ=='));
  });

  it('a task input that is not base64 is 400 naming the field; a data: URL is accepted', async () => {
    const srv = await inProcess();
    try {
      const r = await srv.request('/svc/v1/pdf-info', json({ input_format: 'Base64EncodedFile', file: 'JVBERi0x!!' }));
      assert.equal(r.status, 400);
      const body = await r.json();
      assert.match(JSON.stringify(body), /file is not valid base64/);
      const png = await srv.request(
        '/svc/v1/pdf-info',
        json({ input_format: 'Base64EncodedFile', file: `data:application/pdf;base64,${Buffer.from('%PDF-1.4 junk').toString('base64')}` }),
      );
      assert.ok(png.status >= 400 && png.status < 500, `a decoded but broken PDF is a client fault: ${png.status}`);
    } finally {
      await srv.close();
    }
  });
});
