/**
 * The access log as an operator reads it: the real server in its own process, logging to stderr at the
 * default level. Every request gets one line (method, path, status, duration, owner, the request id its
 * answer carried), in the order the answers were given, none lost when the server stops with lines still
 * batched, and other log lines stay in order around them.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, SCRIPT_RUNNERS } from '../support/runtime-process.ts';
import { accessLineBytes, writeAccessLine } from '../../src/access-line.ts';

const LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) INFO {2}(\S+) (\S+) (\d{3}) (\d+\.\d)ms owner=(\S+) rid=([a-z0-9]{12})$/;

// On each runtime: the lines go to stderr's descriptor (src/log.ts), here a pipe
for (const [runtime, [cmd, ...pre]] of Object.entries(SCRIPT_RUNNERS)) {
  test(`${runtime}: one access line per request, with the id its answer carried, none lost at stop`, async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-access-log-'));
    const child = spawn(cmd, [...pre, 'src/main.ts', '--port', '0', '--data-dir', dataDir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SVC_LOG_LEVEL: 'info' },
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setInterval(() => {
          const m = /listening on (http:\/\/\S+)/.exec(stderr);
          if (m) {
            clearInterval(timer);
            resolve(m[1]);
          }
        }, 50);
        void exited.then((code) => reject(new Error(`server exited ${code}: ${stderr}`)));
      });

      // sequential requests of several kinds; paths are logged as sent, so an encoded newline cannot forge a line
      const sent: { method: string; path: string; status: number; rid: string }[] = [];
      const requests: [string, string][] = [];
      // more than one batch (64 KB: ~770 of these lines) is written before the stop
      for (let i = 0; i < 900; i++) requests.push(['GET', '/api/version']);
      const forged = '/api/x%0A2026-01-01T00:00:00.000Z%20INFO%20%20GET%20/forged%20200%200.1ms%20owner=local%20rid=aaaaaaaaaaaa';
      requests.push(['GET', '/api/nope'], ['HEAD', '/api/version'], ['GET', '/svc/v1/nope/%C3%A9t%C3%A9?q=1'], ['GET', forged], [
        'GET',
        '/health',
      ]);
      for (const [method, path] of requests) {
        const r = await fetch(url + path, { method });
        await r.arrayBuffer();
        sent.push({ method, path: path.replace(/\?.*/, ''), status: r.status, rid: r.headers.get('x-request-id') ?? '' });
      }
      // a line at another level: the batch before it is written first
      const bad = await fetch(`${url}/svc/v1/admin/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
      await bad.arrayBuffer();
      sent.push({ method: 'POST', path: '/svc/v1/admin/keys', status: bad.status, rid: bad.headers.get('x-request-id') ?? '' });

      child.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);

      const lines = stderr.split('\n').map((l) => LINE.exec(l)).filter((m) => m !== null);
      assert.equal(lines.length, sent.length, `one line per request:\n${stderr.slice(-2000)}`);
      const started = Date.now() - 120_000;
      lines.forEach((m, i) => {
        const want = sent[i]!;
        const [, at, method, path, status, ms, owner, rid] = m;
        assert.deepEqual([method, path, Number(status), rid], [want.method, want.path, want.status, want.rid], `line ${i}`);
        assert.ok(Date.parse(at!) > started && Date.parse(at!) <= Date.now(), at);
        assert.ok(Number(ms) >= 0 && Number(ms) < 60_000, ms);
        assert.equal(owner, 'local');
      });
      assert.equal(new Set(sent.map((s) => s.rid)).size, sent.length, 'request ids are unique');
      // the server's own lines keep their places: the stop notice comes after every access line
      const allLines = stderr.split('\n');
      const lastAccess = allLines.findLastIndex((l) => LINE.test(l));
      const stopping = allLines.findIndex((l) => /SIGTERM/.test(l));
      assert.ok(stopping > lastAccess, stderr.slice(-1000));
    } finally {
      child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
}

test('a line of any text: UTF-8 as TextDecoder reads it, times and statuses of every width, within its bound', () => {
  const stamp = new TextEncoder().encode('2026-11-29T20:01:02.345Z');
  const cases: [string, string, number, number, string, string, string][] = [
    ['GET', 'http://127.0.0.1:1/api/version', 200, 0, 'local', 'a1b2c3d4e5f6', 'GET /api/version 200 0.0ms owner=local rid=a1b2c3d4e5f6'],
    ['POST', 'https://h.example/v1/x?q=%0A', 499, 123_456, 'key_9', 'r', 'POST /v1/x 499 12345.6ms owner=key_9 rid=r'],
    // a path with characters beyond ASCII (a client that did not encode them), and an owner so named
    ['GET', 'http://h/été/日本?x', 404, 7, 'ключ', 'rid', 'GET /été/日本 404 0.7ms owner=ключ rid=rid'],
    ['GET', 'http://h', 301, 10, '-', 'x', 'GET / 301 1.0ms owner=- rid=x'],
    ['DELETE', 'http://h/' + 'a'.repeat(5000) + '😀', 500, 99, '-', 'x', `DELETE /${'a'.repeat(5000)}😀 500 9.9ms owner=- rid=x`],
  ];
  for (const [method, url, status, tenths, owner, rid, want] of cases) {
    const most = accessLineBytes(method, url, owner, rid);
    const out = new Uint8Array(3 + most).fill(0xff);
    const end = writeAccessLine(out, 3, stamp, method, url, status, tenths, owner, rid);
    assert.ok(end - 3 <= most, `${end - 3} bytes of at most ${most}`);
    assert.equal(new TextDecoder('utf-8', { fatal: true }).decode(out.subarray(3, end)), `2026-11-29T20:01:02.345Z INFO  ${want}\n`);
    assert.deepEqual([...out.subarray(0, 3)], [0xff, 0xff, 0xff], 'nothing before the line is written');
  }
});
