import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { test } from 'node:test';
import { tempDir } from '../support/server.ts';

test('SIGTERM finishes the request in flight, then the server exits', async () => {
  const dataDir = await tempDir();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', dataDir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (c) => reject(new Error(`exited ${c}: ${err}`)));
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const boundary = 'SHUTDOWN';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\nContent-Type: text/plain\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const payload = 'x'.repeat(64 * 1024);
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${url}/svc/v1/files/upload`, {
      method: 'POST',
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + payload.length * 4 + tail.length),
      },
    }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write(head);
    req.write(payload);
    setTimeout(() => {
      child.kill('SIGTERM'); // while the upload is half sent
      setTimeout(() => {
        for (let i = 0; i < 3; i++) req.write(payload);
        req.end(tail);
      }, 300);
    }, 300);
  });
  const r = await answer;
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).bytes, payload.length * 4);
  assert.equal(await exited, 0);
  assert.match(err, /SIGTERM: finishing in-flight requests/);
});
