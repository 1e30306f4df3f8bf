/**
 * The Vercel AI SDK (`ai`) as a user drives it, with both providers a local server is reached through:
 * `@ai-sdk/openai` (its default model speaks the Responses API; `.chat()` chat completions) and
 * `@ai-sdk/openai-compatible`: generateText, streamText, a tool loop with stopWhen, generateObject,
 * embed / embedMany, and APICallError for 404/400/401. One listening server, a key from the admin API.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APICallError, embed, embedMany, generateObject, generateText, stepCountIs, streamObject, streamText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import * as z from 'zod';
import { type Harness, scripted, serverWithKey, toolCall } from './steer.ts';

let h: Harness;
let openai: ReturnType<typeof createOpenAI>;
let compat: ReturnType<typeof createOpenAICompatible>;
let token = '';
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';

serverWithKey('vercel-ai', (s, key) => {
  h = s;
  token = key;
  openai = createOpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: token });
  compat = createOpenAICompatible({ name: 'svc', baseURL: `${h.srv.url}/v1`, apiKey: token, includeUsage: true });
});

// built when a test runs: the providers exist only after before()
const models = [
  ['@ai-sdk/openai responses', () => openai(MODEL)],
  ['@ai-sdk/openai chat', () => openai.chat(MODEL)],
  ['@ai-sdk/openai-compatible', () => compat.chatModel(MODEL)],
] as const;

describe('Vercel AI SDK: reasoningEffort (openai-compatible sends reasoning_effort)', () => {
  it('high: reasoningText is the thinking, text the answer; none is accepted', async () => {
    const model = compat.chatModel(MODEL);
    const r = await scripted(
      h,
      ['<think>hmm</think>Yes'],
      () => generateText({ model, prompt: 'q', maxRetries: 0, providerOptions: { svc: { reasoningEffort: 'high' } } }),
    );
    assert.equal(r.reasoningText?.trim(), 'hmm');
    assert.equal(r.text.trim(), 'Yes');
    const off = await scripted(
      h,
      ['Plain'],
      () => generateText({ model, prompt: 'q', maxRetries: 0, providerOptions: { svc: { reasoningEffort: 'none' } } }),
    );
    assert.equal(off.text.trim(), 'Plain');
  });
});

describe('Vercel AI SDK: text', () => {
  for (const [label, makeModel] of models) {
    it(`${label}: generateText and streamText give the text, finish reason and usage`, async () => {
      const model = makeModel();
      const r = await scripted(h, ['Hello AI SDK'], () => generateText({ model, prompt: 'hi', maxOutputTokens: 20, maxRetries: 0 }));
      assert.equal(r.text, 'Hello AI SDK');
      assert.equal(r.finishReason, 'stop');
      assert.ok((r.usage.inputTokens ?? 0) > 0 && (r.usage.outputTokens ?? 0) > 0, JSON.stringify(r.usage));
      let streamed = '';
      const s = await scripted(h, ['Hello AI SDK'], async () => {
        const res = streamText({ model, system: 'Be brief.', prompt: 'hi', maxOutputTokens: 20, maxRetries: 0, onError: () => {} });
        for await (const d of res.textStream) streamed += d;
        return { finish: await res.finishReason, usage: await res.usage };
      });
      assert.equal(streamed, 'Hello AI SDK');
      assert.equal(s.finish, 'stop');
      assert.ok((s.usage.outputTokens ?? 0) > 0, JSON.stringify(s.usage));
    });

    it(`${label}: a tool loop (stopWhen) runs the tool and ends on the final answer`, async () => {
      const model = makeModel();
      const calls: unknown[] = [];
      const add = tool({
        description: 'adds',
        inputSchema: z.object({ a: z.number(), b: z.number() }),
        execute: async ({ a, b }) => {
          calls.push({ a, b });
          return a + b;
        },
      });
      const r = await scripted(
        h,
        [toolCall('add', { a: 2, b: 3 }), 'Five'],
        () => generateText({ model, prompt: '2+3?', tools: { add }, stopWhen: stepCountIs(3), maxOutputTokens: 60, maxRetries: 0 }),
      );
      assert.deepEqual(calls, [{ a: 2, b: 3 }]);
      assert.equal(r.steps.length, 2);
      assert.equal(r.steps[0]!.finishReason, 'tool-calls');
      assert.equal(r.text, 'Five');
      // streamed, the same loop
      const seen: string[] = [];
      const s = await scripted(h, [toolCall('add', { a: 2, b: 3 }), 'Five'], async () => {
        const res = streamText({
          model,
          prompt: '2+3?',
          tools: { add },
          stopWhen: stepCountIs(3),
          maxOutputTokens: 60,
          maxRetries: 0,
          onError: () => {},
        });
        for await (const p of res.fullStream) seen.push(p.type);
        return res.text;
      });
      assert.equal(s, 'Five');
      assert.ok(seen.includes('tool-call') && seen.includes('tool-result'), seen.join(','));
    });
  }
});

describe('Vercel AI SDK: objects and embeddings', () => {
  it('generateObject with @ai-sdk/openai (responses and chat)', async () => {
    const schema = z.object({ name: z.string().max(8), n: z.int().min(0).max(9) });
    for (const model of [openai(MODEL), openai.chat(MODEL)]) {
      const { object } = await generateObject({
        model,
        schema,
        prompt: 'make one',
        seed: 2,
        temperature: 1,
        maxOutputTokens: 80,
        maxRetries: 0,
      });
      assert.ok(schema.safeParse(object).success, JSON.stringify(object));
    }
  });

  it('streamObject (responses and chat): partial objects, then the final one the schema accepts', async () => {
    const schema = z.object({ n: z.int().min(1).max(9), ok: z.boolean() });
    for (const model of [openai(MODEL), openai.chat(MODEL)]) {
      const r = streamObject({ model, schema, prompt: 'make one', maxOutputTokens: 80, maxRetries: 0, onError: () => {} });
      const partials = [];
      for await (const p of r.partialObjectStream) partials.push(p);
      assert.ok(partials.length > 0);
      assert.ok(schema.safeParse(await r.object).success);
    }
  });

  it('toolChoice required / a named tool: the call validates against the tool schema', async () => {
    const add = tool({ description: 'adds', inputSchema: z.object({ a: z.number(), b: z.number() }) });
    for (
      const [model, toolChoice] of [[openai.chat(MODEL), 'required'], [openai(MODEL), { type: 'tool', toolName: 'add' }], [
        compat.chatModel(MODEL),
        'required',
      ]] as const
    ) {
      const r = await generateText({ model, tools: { add }, toolChoice, prompt: 'add', maxOutputTokens: 80, maxRetries: 0 });
      assert.equal(r.toolCalls.length, 1, JSON.stringify(r.content));
      assert.equal(r.toolCalls[0]!.toolName, 'add');
      assert.ok(z.object({ a: z.number(), b: z.number() }).safeParse(r.toolCalls[0]!.input).success);
    }
  });

  it('embed and embedMany with both providers: unit vectors; embed equals the same row of embedMany', async () => {
    for (const model of [openai.embedding(EMB), compat.textEmbeddingModel(EMB)]) {
      const one = await embed({ model, value: 'sunny day', maxRetries: 0 });
      const many = await embedMany({ model, values: ['rain', 'sunny day'], maxRetries: 0 });
      assert.equal(many.embeddings.length, 2);
      assert.ok(Math.abs(Math.hypot(...one.embedding) - 1) < 1e-3);
      one.embedding.forEach((x, i) => assert.ok(Math.abs(x - many.embeddings[1]![i]!) < 1e-4));
    }
  });
});

describe('Vercel AI SDK: errors', () => {
  it('APICallError with statusCode for an unknown model (404), a bad field (400) and a bad key (401)', async () => {
    const is = (status: number) => (e: unknown) => {
      assert.ok(APICallError.isInstance(e), String(e));
      assert.equal(e.statusCode, status);
      assert.ok(e.message.length > 0);
      return true;
    };
    for (const model of [openai('no-such-model'), openai.chat('no-such-model'), compat.chatModel('no-such-model')]) {
      await assert.rejects(generateText({ model, prompt: 'x', maxRetries: 0 }), is(404));
    }
    await assert.rejects(generateText({ model: openai.chat(MODEL), prompt: 'x', temperature: 9, maxRetries: 0 }), is(400));
    const bad = createOpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: `svc_${'D'.repeat(43)}` });
    await assert.rejects(generateText({ model: bad(MODEL), prompt: 'x', maxRetries: 0 }), is(401));
    await assert.rejects(embed({ model: bad.embedding(EMB), value: 'x', maxRetries: 0 }), is(401));
  });
});
