/**
 * The Open Responses compliance suite (the openresponses project's bin/compliance-test.ts, kept outside
 * this repository at ../shared/openresponses) run against a listening server: HTTP, SSE, WebSocket mode and
 * compaction. The tiny random fixture model never ends a turn by itself, so its output is steered to a
 * short answer (and to a call where tools are offered), through the engine's logits like any model's.
 * The one case a model of the fixture's kind cannot pass: image-input (no vision; refused with 400).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, it } from 'node:test';
import type { ChatRequest } from '../../../src/services/chat/index.ts';
import { forceTokens, type Harness, startHarness, tinyLlamaIds } from '../ollama/harness.ts';

const SUITE = resolve('../shared/openresponses');
let h: Harness;

before(async () => {
  assert.ok(existsSync(join(SUITE, 'bin/compliance-test.ts')), `the compliance suite is expected at ${SUITE}`);
  if (!existsSync(join(SUITE, 'node_modules/zod'))) {
    // its one dependency, installed where its README says
    const r = spawnSync('npm', ['install', '--no-save', '--no-package-lock', '--ignore-scripts', 'zod@3.25.76'], {
      cwd: SUITE,
      stdio: 'inherit',
    });
    assert.equal(r.status, 0, 'npm install of the suite dependency');
  }
  h = await startHarness();
  const answer = await tinyLlamaIds('Hello there, friend.');
  const call = await tinyLlamaIds('<tool_call>\n{"name": "get_weather", "arguments": {"location": "San Francisco, CA"}}\n</tool_call>');
  const chat = h.srv.chat.chat.bind(h.srv.chat);
  h.srv.chat.chat = (req: ChatRequest) => chat({ ...req, logitsProcessors: [forceTokens(req.tools?.length ? call : answer)] });
});
after(async () => h?.close());

it('passes every case a text model without vision can pass', async () => {
  const out = join(tmpdir(), `open-responses-${process.pid}.json`);
  const fd = openSync(out, 'w');
  const p = spawn(process.execPath, [
    '--experimental-websocket',
    '--import',
    'tsx',
    join(SUITE, 'bin/compliance-test.ts'),
    '--base-url',
    `${h.srv.url}/v1`,
    '--api-key',
    'unused',
    '--model',
    'tiny-llama:test',
    '--json',
  ], { stdio: ['ignore', fd, 'inherit'] });
  await new Promise((r) => p.on('close', r));
  const text = readFileSync(out, 'utf8');
  const report = JSON.parse(text.slice(text.indexOf('{'))) as { results: { id: string; status: string; errors?: string[] }[] };
  const byId = new Map(report.results.map((r) => [r.id, r]));
  assert.ok(report.results.length >= 17, `all cases ran (${report.results.length})`);
  for (const r of report.results) {
    if (r.id === 'image-input') continue;
    assert.equal(r.status, 'passed', `${r.id}: ${JSON.stringify(r.errors)}`);
  }
  const image = byId.get('image-input')!;
  assert.equal(image.status, 'failed');
  assert.match(String(image.errors?.[0]), /^HTTP 400/, 'a model without vision refuses images with 400');
});
