/**
 * The MCP server at /mcp, judged by the official MCP client SDK over Streamable HTTP against a listening
 * server (and the MCP Inspector CLI): tools listed with JSON-schema inputs, PDF tools called on PDFs made
 * by pdf-lib and judged by qpdf, progress notifications, file outputs as resource links owned by the
 * caller, tool failures as isError results, chat through the tiny fixture model, keys enforced.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PDFDocument } from '@cantoo/pdf-lib';
import { type Harness, startHarness } from '../ollama/harness.ts';

let h: Harness;
let keyA: string;
let keyB: string;

async function makePdf(pages: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pages; i++) doc.addPage([300, 400]).drawText(`page ${i + 1}`, { x: 20, y: 350 });
  return doc.save();
}
const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
const qpdfPages = (bytes: Uint8Array) => {
  const f = join(h.srv.dataDir, `judge-${Math.random().toString(36).slice(2)}.pdf`);
  writeFileSync(f, bytes);
  return Number(execFileSync('qpdf', ['--show-npages', f]).toString().trim());
};

async function connect(key?: string) {
  const client = new Client({ name: 'svc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${h.srv.url}/mcp`), {
    requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} },
  });
  await client.connect(transport);
  return client;
}

async function upload(key: string, bytes: Uint8Array, name: string): Promise<string> {
  const form = new FormData();
  form.append('purpose', 'user_data');
  form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), name);
  const res = await fetch(`${h.srv.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { id: string }).id;
}

before(async () => {
  h = await startHarness();
  keyA = (await h.srv.keys.create({ name: 'a', role: 'user' })).token;
  keyB = (await h.srv.keys.create({ name: 'b', role: 'user' })).token;
});
after(async () => h?.close());

describe('MCP server over Streamable HTTP', () => {
  it('refuses a caller without a key once keys exist', async () => {
    await assert.rejects(connect(), /401|unauthorized/i);
    const res = await fetch(`${h.srv.url}/mcp`);
    assert.equal(res.status, 401);
  });

  it('lists the native tasks as tools with JSON-schema inputs', async () => {
    const c = await connect(keyA);
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['pdf_info', 'pdf_merge', 'pdf_split', 'document_to_markdown', 'ocr', 'embeddings', 'chat']) {
      assert.ok(names.includes(n), n);
    }
    const info = tools.find((t) => t.name === 'pdf_info')!;
    assert.equal(info.inputSchema.type, 'object');
    assert.ok(info.inputSchema.properties && 'file_id' in info.inputSchema.properties);
    await c.close();
  });

  it("pdf_info on a base64 PDF: page count equal to qpdf's", async () => {
    const pdf = await makePdf(3);
    const c = await connect(keyA);
    const r = await c.callTool({ name: 'pdf_info', arguments: { file_base64: b64(pdf) } });
    assert.equal(r.isError, undefined);
    const info = r.structuredContent as { page_count: number };
    assert.equal(info.page_count, qpdfPages(pdf));
    await c.close();
  });

  it('pdf_merge by file ids: progress reported, output a file of the caller (another key gets 404)', async () => {
    const a = await makePdf(2);
    const b = await makePdf(3);
    const ids = [await upload(keyA, a, 'a.pdf'), await upload(keyA, b, 'b.pdf')];
    const c = await connect(keyA);
    const progress: { progress: number; total?: number }[] = [];
    const r = await c.callTool({ name: 'pdf_merge', arguments: { file_ids: ids } }, undefined, { onprogress: (p) => progress.push(p) });
    assert.equal(r.isError, undefined, JSON.stringify(r.content));
    const link = (r.content as { type: string; uri?: string; mimeType?: string }[]).find((x) => x.type === 'resource_link')!;
    assert.ok(link, 'a resource link');
    assert.equal(link.mimeType, 'application/pdf');
    const fileId = link.uri!.replace('svc://files/', '');
    assert.ok(progress.length >= 1, 'at least one progress notification');
    assert.equal(progress.at(-1)!.progress, progress.at(-1)!.total);
    const got = await fetch(`${h.srv.url}/svc/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${keyA}` } });
    assert.equal(got.status, 200);
    assert.equal(qpdfPages(new Uint8Array(await got.arrayBuffer())), 5);
    const other = await fetch(`${h.srv.url}/svc/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${keyB}` } });
    assert.equal(other.status, 404);
    await c.close();
  });

  it('another key cannot use a file id of the first: the tool fails with 404', async () => {
    const id = await upload(keyA, await makePdf(1), 'private.pdf');
    const c = await connect(keyB);
    const r = await c.callTool({ name: 'pdf_info', arguments: { file_id: id } });
    assert.equal(r.isError, true);
    assert.equal((r.structuredContent as { status: number }).status, 404);
    await c.close();
  });

  it('pdf_split returns one file per part; bad input is an isError result naming the reason', async () => {
    const c = await connect(keyA);
    const pdf = await makePdf(4);
    const r = await c.callTool({ name: 'pdf_split', arguments: { file_base64: b64(pdf), ranges: ['1-1', '2-4'] } });
    const links = (r.content as { type: string; uri?: string }[]).filter((x) => x.type === 'resource_link');
    assert.equal(links.length, 2);
    const counts = [];
    for (const l of links) {
      const res = await fetch(`${h.srv.url}/svc/v1/files/${l.uri!.replace('svc://files/', '')}/content`, {
        headers: { authorization: `Bearer ${keyA}` },
      });
      counts.push(qpdfPages(new Uint8Array(await res.arrayBuffer())));
    }
    assert.deepEqual(counts, [1, 3]);
    const bad = await c.callTool({ name: 'pdf_info', arguments: { file_base64: b64(new TextEncoder().encode('not a pdf at all')) } });
    assert.equal(bad.isError, true);
    assert.equal((bad.structuredContent as { status: number }).status, 415);
    await assert.rejects(c.callTool({ name: 'no_such_tool', arguments: {} }), /unknown tool/);
    await c.close();
  });

  it("chat runs the tiny model under the caller's key", async () => {
    const c = await connect(keyA);
    const r = await c.callTool({ name: 'chat', arguments: { model: 'tiny-llama:test', prompt: 'hello', max_tokens: 4, temperature: 0 } });
    assert.equal(r.isError, undefined, JSON.stringify(r.content));
    const direct = await h.post('/v1/chat/completions', {
      model: 'tiny-llama:test',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 4,
      temperature: 0,
    }, { headers: { 'content-type': 'application/json', authorization: `Bearer ${keyA}` } });
    const want = ((await direct.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content;
    assert.equal((r.content as { text: string }[])[0].text, want);
    await c.close();
  });

  it('the MCP Inspector CLI lists the tools', async () => {
    // asynchronous: the server answers from this very process
    const { stdout: out } = await promisify(execFile)('npx', [
      '--no-install',
      'mcp-inspector',
      '--cli',
      `${h.srv.url}/mcp`,
      '--transport',
      'http',
      '--method',
      'tools/list',
      '--header',
      `Authorization: Bearer ${keyA}`,
    ], { encoding: 'utf8', timeout: 120_000 });
    const names = (JSON.parse(out) as { tools: { name: string }[] }).tools.map((t) => t.name);
    assert.ok(names.includes('pdf_merge') && names.includes('ocr'), out.slice(0, 300));
  });
});

describe('svc mcp (stdio)', () => {
  it('the MCP client SDK starts `svc mcp`, lists the tools and calls pdf_info on the running server under the key', async () => {
    const root = join(import.meta.dirname, '../../..');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        join(root, 'node_modules/tsx/dist/esm/index.mjs'),
        join(root, 'src/main.ts'),
        'mcp',
        '--port',
        new URL(h.srv.url).port,
        '--no-start',
      ],
      env: { ...process.env as Record<string, string>, SVC_API_KEY: keyA },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'svc-stdio-test', version: '1.0.0' });
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'pdf_split'));
    const id = await upload(keyA, await makePdf(2), 'two.pdf');
    const r = await client.callTool({ name: 'pdf_info', arguments: { file_id: id } });
    assert.equal((r.structuredContent as { page_count: number }).page_count, 2);
    // the key travelled: a file of key B is not found
    const other = await upload(keyB, await makePdf(1), 'b.pdf');
    const denied = await client.callTool({ name: 'pdf_info', arguments: { file_id: other } });
    assert.equal(denied.isError, true);
    await client.close();
  });
});
