/**
 * Agents and skills: lifecycle through the native routes, privacy per key, and their application in
 * /v1/chat/completions judged by the official `openai` client against the tiny fixture model (an agent's
 * answer equals the plain request it stands for; a skill's output schema is enforced, checked by ajv);
 * unknown names and bad skill inputs are 400s naming the field; skills as MCP prompts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Harness, startHarness } from '../ollama/harness.ts';

let h: Harness;
let keyA: string;
let keyB: string;
let openai: OpenAI;
const MODEL = 'tiny-llama:test';

const call = (key: string, method: string, path: string, body?: unknown) =>
  fetch(`${h.srv.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

before(async () => {
  h = await startHarness();
  keyA = (await h.srv.keys.create({ name: 'a', role: 'user' })).token;
  keyB = (await h.srv.keys.create({ name: 'b', role: 'user' })).token;
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: keyA, maxRetries: 0 });
});
after(async () => h?.close());

const SUMMARY = {
  name: 'summarize',
  description: 'Summarizes a text',
  prompt: 'Summarize in {{words}} words: {{text}}',
  input_schema: {
    type: 'object',
    properties: { text: { type: 'string', description: 'the text' }, words: { type: 'integer', minimum: 1 } },
    required: ['text', 'words'],
    additionalProperties: false,
  },
  output_schema: {
    type: 'object',
    properties: { summary: { type: 'string', maxLength: 20 } },
    required: ['summary'],
    additionalProperties: false,
  },
};

describe('agents', () => {
  it('lifecycle: create, read, replace, list, private to the key, delete', async () => {
    let r = await call(keyA, 'POST', '/svc/v1/agents', {
      name: 'helper',
      model: MODEL,
      instructions: 'Be brief.',
      max_tokens: 5,
      temperature: 0,
    });
    assert.equal(r.status, 201);
    r = await call(keyA, 'GET', '/svc/v1/agents/helper');
    assert.equal(((await r.json()) as { instructions: string }).instructions, 'Be brief.');
    r = await call(keyA, 'PUT', '/svc/v1/agents/helper', { model: MODEL, instructions: 'Be very brief.', max_tokens: 4, temperature: 0 });
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { instructions: string }).instructions, 'Be very brief.');
    r = await call(keyA, 'GET', '/svc/v1/agents');
    assert.deepEqual(((await r.json()) as { data: { name: string }[] }).data.map((a) => a.name), ['helper']);
    assert.equal((await call(keyB, 'GET', '/svc/v1/agents/helper')).status, 404);
    assert.deepEqual(((await (await call(keyB, 'GET', '/svc/v1/agents')).json()) as { data: unknown[] }).data, []);
    assert.equal((await call(keyB, 'DELETE', '/svc/v1/agents/helper')).status, 404);
    r = await call(keyA, 'POST', '/svc/v1/agents', { name: 'bad name!', model: MODEL });
    assert.equal(r.status, 400);
    r = await call(keyA, 'POST', '/svc/v1/agents', { name: 'x', temperature: 9 });
    assert.equal(r.status, 400);
  });

  it('an agent in chat gives the same answer as the request it stands for', async () => {
    const viaAgent = await openai.chat.completions.create(
      { agent: 'helper', messages: [{ role: 'user', content: 'hello there' }] } as never,
    );
    const plain = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'system', content: 'Be very brief.' }, { role: 'user', content: 'hello there' }],
      max_tokens: 4,
      temperature: 0,
    });
    assert.equal(viaAgent.model, MODEL);
    assert.equal(viaAgent.choices[0].message.content, plain.choices[0].message.content);
    assert.equal(viaAgent.usage!.prompt_tokens, plain.usage!.prompt_tokens);
    assert.ok(viaAgent.usage!.completion_tokens <= 4);
  });

  it('unknown agent: 400 naming it; another key cannot use the agent', async () => {
    await assert.rejects(
      openai.chat.completions.create({ agent: 'nope', messages: [{ role: 'user', content: 'x' }] } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown agent "nope"/.test(e.message),
    );
    const b = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: keyB, maxRetries: 0 });
    await assert.rejects(
      b.chat.completions.create({ agent: 'helper', messages: [{ role: 'user', content: 'x' }] } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown agent "helper"/.test(e.message),
    );
  });
});

describe('skills', () => {
  it('versions: each POST adds one; read latest or one version; private to the key', async () => {
    let r = await call(keyA, 'POST', '/svc/v1/skills', { ...SUMMARY, prompt: 'Old: {{text}}' });
    assert.equal(r.status, 201);
    assert.equal(((await r.json()) as { version: number }).version, 1);
    r = await call(keyA, 'POST', '/svc/v1/skills', SUMMARY);
    assert.equal(((await r.json()) as { version: number }).version, 2);
    assert.equal(((await (await call(keyA, 'GET', '/svc/v1/skills/summarize')).json()) as { version: number }).version, 2);
    assert.equal(
      ((await (await call(keyA, 'GET', '/svc/v1/skills/summarize?version=1')).json()) as { prompt: string }).prompt,
      'Old: {{text}}',
    );
    assert.deepEqual(
      ((await (await call(keyA, 'GET', '/svc/v1/skills/summarize/versions')).json()) as { data: { version: number }[] }).data.map((s) =>
        s.version
      ),
      [1, 2],
    );
    assert.equal((await call(keyB, 'GET', '/svc/v1/skills/summarize')).status, 404);
    r = await call(keyA, 'POST', '/svc/v1/skills', { ...SUMMARY, name: 'broken', prompt: 'uses {{missing}}' });
    assert.equal(r.status, 400);
    assert.match(await r.text(), /missing/);
  });

  it('skill_inputs are validated against the input schema: 400 naming the field', async () => {
    const ask = (inputs: unknown) =>
      call(keyA, 'POST', '/v1/chat/completions', { model: MODEL, skill: 'summarize', skill_inputs: inputs, max_tokens: 8 });
    let r = await ask({ text: 'abc' });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /skill_inputs\.words/);
    r = await ask({ text: 'abc', words: 'three' });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /skill_inputs\.words/);
    r = await ask({ text: 'abc', words: 3, colour: 'red' });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /skill_inputs\.colour/);
    r = await call(keyA, 'POST', '/v1/chat/completions', { model: MODEL, skill: 'no-such-skill', max_tokens: 8 });
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /unknown skill "no-such-skill"/);
    r = await call(keyB, 'POST', '/v1/chat/completions', {
      model: MODEL,
      skill: 'summarize',
      skill_inputs: { text: 'a', words: 2 },
      max_tokens: 8,
    });
    assert.equal(r.status, 400);
  });

  it('a skill renders its prompt and its output schema is enforced by constrained decoding', async () => {
    const out = await openai.chat.completions.create(
      { model: MODEL, skill: 'summarize', skill_inputs: { text: 'The cat sat.', words: 3 }, max_tokens: 40, temperature: 0 } as never,
    ) as OpenAI.ChatCompletion;
    const parsed = JSON.parse(out.choices[0].message.content!);
    assert.ok(new Ajv().validate(SUMMARY.output_schema, parsed), JSON.stringify(parsed));
    // the same as the plain request the skill stands for
    const plain = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Summarize in 3 words: The cat sat.' }],
      max_tokens: 40,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'summarize', schema: SUMMARY.output_schema, strict: true } },
    });
    assert.equal(out.choices[0].message.content, plain.choices[0].message.content);
  });

  it('an agent can carry a default skill', async () => {
    await call(keyA, 'POST', '/svc/v1/agents', { name: 'summarizer', model: MODEL, skill: 'summarize', temperature: 0, max_tokens: 40 });
    const out = await openai.chat.completions.create(
      { agent: 'summarizer', skill_inputs: { text: 'The cat sat.', words: 3 } } as never,
    ) as OpenAI.ChatCompletion;
    assert.ok(new Ajv().validate(SUMMARY.output_schema, JSON.parse(out.choices[0].message.content!)));
  });

  it('skills are MCP prompts of their key', async () => {
    const client = new Client({ name: 't', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.srv.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keyA}` } } }),
    );
    const { prompts } = await client.listPrompts();
    const p = prompts.find((x) => x.name === 'summarize')!;
    assert.deepEqual(p.arguments!.map((a) => [a.name, a.required]), [['text', true], ['words', true]]);
    const got = await client.getPrompt({ name: 'summarize', arguments: { text: 'Hi all', words: '2' } });
    assert.deepEqual(got.messages[0].content, { type: 'text', text: 'Summarize in 2 words: Hi all' });
    await assert.rejects(client.getPrompt({ name: 'summarize', arguments: { text: 'Hi' } }), /skill_inputs\.words/);
    await client.close();
  });

  it('delete removes every version', async () => {
    assert.equal((await call(keyA, 'DELETE', '/svc/v1/skills/summarize')).status, 200);
    assert.equal((await call(keyA, 'GET', '/svc/v1/skills/summarize')).status, 404);
  });
});
