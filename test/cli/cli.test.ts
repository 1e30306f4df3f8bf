/**
 * The client commands driven as a person drives them: in a pseudo-terminal (util-linux `script`) against a
 * listening server whose hub is the local stand-in. Progress bars, the interactive chat, piped prompts,
 * task shortcuts judged by qpdf, exit codes and one-line errors.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument } from '@cantoo/pdf-lib';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { listening, tempDir } from '../support/server.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'src/main.ts');
const TSX = join(ROOT, 'node_modules/tsx/dist/esm/index.mjs');

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let work: string;

interface Ran {
  code: number;
  out: string;
  err: string;
}

/** Runs `svc <args>` with pipes (no terminal). */
function svc(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args, '--port', new URL(srv.url).port, '--no-start'], {
    cwd: work,
    env: { ...process.env, NO_COLOR: '1', ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  child.stdin.end(opts.input ?? '');
  return new Promise((r) => child.on('close', (code) => r({ code: code ?? -1, out, err })));
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `svc <args>` inside a pseudo-terminal; `steps` are typed one after the other, each once the screen
 * shows its `waitFor` text. Returns everything the terminal showed.
 */
function svcInTerminal(args: string[], steps: { waitFor: RegExp; type?: string }[] = [], timeoutMs = 120_000): Promise<Ran> {
  const cmd = [process.execPath, '--import', TSX, MAIN, ...args, '--port', new URL(srv.url).port, '--no-start'].map(shellQuote).join(' ');
  const child = spawn('script', ['-qefc', cmd, '/dev/null'], {
    cwd: work,
    env: { ...process.env, TERM: 'xterm', COLUMNS: '100' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let step = 0;
  const next = () => {
    while (step < steps.length && steps[step]!.waitFor.test(out)) {
      const s = steps[step++]!;
      if (s.type !== undefined) child.stdin.write(s.type);
    }
  };
  child.stdout.on('data', (d) => {
    out += d;
    next();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((r) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      r({ code: code ?? -1, out, err: '' });
    })
  );
}

/** readline draws its prompt, then moves the cursor past it. */
const PROMPT = />>> (\x1b\[\d+G)?$/;
const MORE = /\.\.\. (\x1b\[\d+G)?$/;
/** Letters only: the random fixture model emits control bytes a terminal may show differently. */
const letters = (s: string) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/[^A-Za-z]/g, '');

async function chatGreedy(content: string): Promise<string> {
  const r = await fetch(`${srv.url}/api/chat`, {
    method: 'POST',
    body: JSON.stringify({
      model: 'tiny-llama:test',
      messages: [{ role: 'user', content }],
      stream: false,
      options: { temperature: 0, num_predict: 12 },
      think: false,
    }),
  });
  return ((await r.json()) as { message: { content: string } }).message.content;
}

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu' });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  work = await tempDir('svc-cli-');
});

after(async () => {
  await srv?.stop();
  await hub?.close();
});

describe('svc client commands', () => {
  it('pull draws a progress bar per layer that reaches 100%, then list shows the model downloaded', async () => {
    const r = await svcInTerminal(['pull', 'tiny-llama:test']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /100% ▕█+▏/);
    assert.match(r.out, /\r\x1b\[2K/, 'the bars are redrawn in place on a terminal');
    const list = await svc(['list']);
    assert.equal(list.code, 0, list.err);
    const row = list.out.split('\n').find((l) => l.startsWith('tiny-llama:test'));
    assert.ok(row, list.out);
    assert.match(row!, /just now|minute/);
    assert.match(list.out.split('\n')[0]!, /^NAME\s+ID\s+SIZE\s+MODIFIED$/);
  });

  it('run: an interactive chat streams the greedy reply, keeps the parameter, and ends on /bye', async () => {
    const expected = await chatGreedy('hello there');
    assert.ok(expected.length > 0);
    const r = await svcInTerminal(['run', 'tiny-llama:test', '--hidethinking'], [
      { waitFor: PROMPT, type: '/set parameter temperature 0\r' },
      { waitFor: /Set parameter 'temperature'[\s\S]*>>> /, type: '/set parameter num_predict 12\r' },
      { waitFor: /Set parameter 'num_predict'[\s\S]*>>> /, type: '/set nothink\r' },
      { waitFor: /Set 'nothink' mode[\s\S]*>>> /, type: 'hello there\r' },
      { waitFor: /hello there[\s\S]*>>> (\x1b\[\d+G)?$/, type: '/bye\r' },
    ]);
    assert.equal(r.code, 0, r.out);
    const afterPrompt = r.out.slice(r.out.lastIndexOf('hello there') + 'hello there'.length, r.out.lastIndexOf('/bye'));
    assert.ok(letters(expected).length > 0);
    assert.ok(
      letters(afterPrompt).includes(letters(expected)),
      `reply not streamed: ${JSON.stringify(afterPrompt.slice(0, 300))} vs ${JSON.stringify(expected)}`,
    );
  });

  it('run: a multi-line message between """ is sent as one message', async () => {
    const r = await svcInTerminal(['run', 'tiny-llama:test'], [
      { waitFor: PROMPT, type: '/set parameter num_predict 4\r' },
      { waitFor: /Set parameter[\s\S]*>>> /, type: '"""first line\r' },
      { waitFor: MORE, type: 'second line"""\r' },
      { waitFor: /second line[\s\S]*>>> (\x1b\[\d+G)?$/, type: '\x04' },
    ]);
    assert.equal(r.code, 0, r.out);
    assert.doesNotMatch(r.out, /svc:/);
  });

  it('run: a piped prompt is answered once, without a prompt or colours', async () => {
    const r = await svc(['run', 'tiny-llama:test'], { input: 'Say something\n' });
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.trim().length > 0);
    // the sequences the CLI itself writes on a terminal (colours, readline's cursor, line erase); the random
    // fixture model samples control bytes of its own (an ESC then "[" among them), so a bare ESC proves nothing
    assert.doesNotMatch(r.out, />>>|\x1b\[[0-9;]*[mGK]/);
  });

  it('ps lists the loaded model; stop unloads it; --json prints the raw answer', async () => {
    const ps = await svc(['ps']);
    assert.equal(ps.code, 0, ps.err);
    assert.match(ps.out, /^tiny-llama:test\s/m);
    assert.equal((await svc(['stop', 'tiny-llama:test'])).code, 0);
    const raw = await svc(['ps', '--json']);
    assert.deepEqual(JSON.parse(raw.out), { models: [] });
  });

  it('show, cp and rm manage the model', async () => {
    const show = await svc(['show', 'tiny-llama:test']);
    assert.equal(show.code, 0, show.err);
    assert.match(show.out, /architecture\s+llama/);
    assert.match(show.out, /Capabilities\n\s+completion/);
    assert.equal((await svc(['cp', 'tiny-llama:test', 'my-copy'])).code, 0);
    assert.match((await svc(['list'])).out, /^my-copy\b/m);
    const rm = await svc(['rm', 'my-copy']);
    assert.equal(rm.code, 0, rm.err);
    assert.doesNotMatch((await svc(['list'])).out, /^my-copy\b/m);
  });

  it('an unknown model exits 1 with the server reason on one line', async () => {
    const r = await svc(['show', 'no-such-model']);
    assert.equal(r.code, 1);
    assert.equal(r.out, '');
    assert.equal(r.err.trim().split('\n').length, 1, r.err);
    assert.match(r.err, /^svc: .*no-such-model/);
  });

  it('usage errors exit 2; no server exits 3 with --no-start', async () => {
    const usage = await svc(['pull']);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /usage: svc pull <model>/);
    const child = spawnSync(process.execPath, ['--import', TSX, MAIN, 'list', '--port', '1', '--no-start'], {
      encoding: 'utf8',
      cwd: work,
    });
    assert.equal(child.status, 3, child.stderr);
    assert.match(child.stderr, /no server answers at http:\/\/127\.0\.0\.1:1/);
  });

  it('pdf merge writes the merged document (judged by qpdf)', async () => {
    for (const [name, n] of [['a.pdf', 2], ['b.pdf', 3]] as const) {
      const doc = await PDFDocument.create();
      for (let i = 0; i < n; i++) doc.addPage([200, 200]);
      await writeFile(join(work, name), await doc.save());
    }
    const r = await svcInTerminal(['pdf', 'merge', 'a.pdf', 'b.pdf', '-o', 'out.pdf']);
    assert.equal(r.code, 0, r.out);
    const pages = spawnSync('qpdf', ['--show-npages', join(work, 'out.pdf')], { encoding: 'utf8' });
    assert.equal(pages.stdout.trim(), '5');
    const info = await svc(['pdf', 'info', 'out.pdf']);
    assert.equal(info.code, 0, info.err);
    assert.equal(JSON.parse(info.out).page_count ?? JSON.parse(info.out).pages, 5);
  });

  it('md prints a document as Markdown; a binary result on a terminal without -o is a usage error', async () => {
    await writeFile(join(work, 'note.html'), '<h1>Title</h1><p>Some <b>bold</b> text.</p>');
    const r = await svc(['md', 'note.html']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^# Title/m);
    const t = await svcInTerminal(['pdf', 'merge', 'a.pdf', 'b.pdf']);
    assert.equal(t.code, 2);
    assert.match(t.out, /name it with -o/);
    assert.equal(await readFile(join(work, 'out.pdf')).then((b) => b.length > 0), true);
  });

  it('starts a server in the background when none answers', async () => {
    const dataDir = await tempDir('svc-cli-bg-');
    const probe = spawnSync(process.execPath, [
      '-e',
      'const s=require("net").createServer().listen(0,()=>{console.log(s.address().port);s.close()})',
    ], { encoding: 'utf8' });
    const port = probe.stdout.trim();
    const child = spawnSync(process.execPath, ['--import', TSX, MAIN, 'list', '--port', port, '--data-dir', dataDir], {
      encoding: 'utf8',
      cwd: work,
      timeout: 90_000,
    });
    try {
      assert.equal(child.status, 0, child.stderr);
      assert.match(child.stderr, /starting a server in the background/);
      assert.match(child.stdout, /^NAME/);
      const v = await fetch(`http://127.0.0.1:${port}/api/version`);
      assert.equal(v.status, 200);
    } finally {
      // `--` ends pkill's options: the pattern itself starts with dashes
      assert.equal(spawnSync('pkill', ['-f', '--', `--data-dir ${dataDir}`]).status, 0, 'the background server was stopped');
    }
  });
});
