/**
 * The structured-output paths of real client libraries against a listening server on the tiny random model:
 * openai's `zodResponseFormat` + `chat.completions.parse`, the Vercel AI SDK's `generateObject` through
 * `@ai-sdk/openai-compatible`, LangChain's `withStructuredOutput` (json_schema) and `bindTools` with a
 * forced tool, and ollama-js `format` with a zod 4 schema. Each client parses and validates the answer
 * with zod itself; every output is validated again by ajv with ajv-formats. Several seeds each.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as z from 'zod';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { generateObject } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { type Harness, startHarness } from '../ollama/harness.ts';

let h: Harness;
const MODEL = 'tiny-llama:test';
const ajv = new Ajv2020({ strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

before(async () => {
  h = await startHarness();
});
after(async () => h?.close());

// integers (zod emits safe-integer bounds), bounded numbers, formats, a pattern, a record, a discriminated union
const Order = z.object({
  id: z.uuid(),
  qty: z.int().min(1).max(50),
  price: z.number().min(0).max(1000),
  email: z.email(),
  placed: z.iso.datetime(),
  sku: z.string().regex(/^[A-Z]{2}-\d{3}$/),
  notes: z.record(z.string(), z.int()),
  ship: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('post'), zip: z.string().max(6) }),
    z.object({ kind: z.literal('pickup'), store: z.int() }),
  ]),
});
const validate = ajv.compile(z.toJSONSchema(Order, { target: 'draft-2020-12' }) as object);
const check = (v: unknown) => assert.ok(validate(v), `${JSON.stringify(v)} ${JSON.stringify(validate.errors)}`);
const SEEDS = [1, 2, 3, 4, 5];
const messages = [{ role: 'user' as const, content: 'Make an order.' }];

describe('client libraries, structured output on the random model', () => {
  it('openai zodResponseFormat + parse', async () => {
    const openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
    for (const seed of SEEDS) {
      // the openai helper itself refuses records (OpenAI's strict mode has none): the rest of the order
      const Strict = Order.omit({ notes: true });
      const r = await openai.chat.completions.parse({
        model: MODEL,
        messages,
        seed,
        temperature: 1,
        max_tokens: 400,
        response_format: zodResponseFormat(Strict, 'order'),
      });
      const parsed = r.choices[0].message.parsed;
      assert.ok(parsed);
      const v = ajv.compile(z.toJSONSchema(Strict) as object);
      assert.ok(v(parsed), JSON.stringify(v.errors));
    }
  });

  it('Vercel AI SDK generateObject (zod 4 schema, structured outputs)', async () => {
    const provider = createOpenAICompatible({ name: 'svc', baseURL: `${h.srv.url}/v1`, supportsStructuredOutputs: true });
    for (const seed of SEEDS) {
      const { object } = await generateObject({
        model: provider.chatModel(MODEL),
        schema: Order,
        prompt: 'Make an order.',
        seed,
        temperature: 1,
        maxOutputTokens: 400,
        maxRetries: 0,
      });
      check(object);
    }
  });

  it('LangChain withStructuredOutput (jsonSchema) and bindTools with a forced zod tool', async () => {
    const llm = new ChatOpenAI({
      model: MODEL,
      apiKey: 'x',
      configuration: { baseURL: `${h.srv.url}/v1` },
      temperature: 1,
      maxTokens: 400,
      maxRetries: 0,
    });
    for (const seed of SEEDS) {
      const structured = (llm.withConfig({ seed } as never) as unknown as ChatOpenAI).withStructuredOutput(Order, { method: 'jsonSchema' });
      check(await structured.invoke('Make an order.'));
    }
    // the tool's schema is printed into the prompt: a small one fits the tiny model's 512-token context
    const Small = z.object({ q: z.int().min(1).max(9) });
    const checkSmall = ajv.compile(z.toJSONSchema(Small) as object);
    const tool = { name: 'o', description: 'o', schema: Small };
    const withTool = llm.bindTools([tool], { tool_choice: 'o' });
    for (const seed of SEEDS) {
      const msg = await withTool.invoke('o', { seed } as never);
      assert.equal(msg.tool_calls?.[0]?.name, 'o');
      assert.ok(checkSmall(msg.tool_calls![0].args), JSON.stringify(msg.tool_calls![0].args));
      assert.ok(Small.safeParse(msg.tool_calls![0].args).success);
    }
  });

  it('ollama-js format with a zod 4 JSON schema', async () => {
    for (const seed of SEEDS) {
      const r = await h.ollama.chat({
        model: 'tiny-llama',
        messages,
        format: z.toJSONSchema(Order),
        stream: false,
        options: { seed, temperature: 1, num_predict: 400 },
      });
      const v = JSON.parse(r.message.content);
      check(v);
      assert.ok(Order.safeParse(v).success);
    }
  });
});
