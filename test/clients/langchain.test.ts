/**
 * LangChain JS as a user drives it against one listening server (key from the admin API): ChatOpenAI
 * (chat completions and useResponsesApi: true) invoke, stream, bindTools with a tool call parsed into
 * tool_calls and a ToolMessage round trip; OpenAIEmbeddings; @langchain/ollama ChatOllama and
 * OllamaEmbeddings; the errors LangChain raises for 404 and 401 carry the status.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { ChatOllama, OllamaEmbeddings } from '@langchain/ollama';
import { AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import * as z from 'zod';
import { type Harness, scripted, serverWithKey, toolCall } from './steer.ts';

let h: Harness;
let token = '';
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';

serverWithKey('langchain', (s, key) => {
  h = s;
  token = key;
});

const chatOpenAI = (o: Record<string, unknown> = {}) =>
  new ChatOpenAI({ model: MODEL, apiKey: token, configuration: { baseURL: `${h.srv.url}/v1` }, maxRetries: 0, maxTokens: 60, ...o });
const addTool = { name: 'add', description: 'adds two numbers', schema: z.object({ a: z.number(), b: z.number() }) };

// ChatOpenAI sends `reasoning` only for OpenAI's reasoning model names; for other models users pass it in modelKwargs
describe('ChatOpenAI with reasoning_effort (modelKwargs)', () => {
  it('effort high: the thinking is split from the text; effort minimal is accepted too', async () => {
    const r = await scripted(h, ['<think>hmm</think>Yes'], () => chatOpenAI({ modelKwargs: { reasoning_effort: 'high' } }).invoke('q'));
    assert.equal((r.additional_kwargs as { reasoning_content?: string }).reasoning_content?.trim(), 'hmm');
    assert.equal(r.text.trim(), 'Yes');
    const off = await scripted(h, ['No thinking'], () => chatOpenAI({ modelKwargs: { reasoning_effort: 'minimal' } }).invoke('q'));
    assert.equal(off.text.trim(), 'No thinking');
  });
});

for (const useResponsesApi of [false, true]) {
  describe(`ChatOpenAI (${useResponsesApi ? 'useResponsesApi' : 'chat completions'})`, () => {
    it('invoke and stream: the text; usage metadata', async () => {
      const llm = chatOpenAI({ useResponsesApi });
      const r = await scripted(h, ['LangChain says hi'], () => llm.invoke([new SystemMessage('Be brief.'), new HumanMessage('hi')]));
      assert.equal(r.text, 'LangChain says hi');
      assert.ok((r.usage_metadata?.output_tokens ?? 0) > 0, JSON.stringify(r.usage_metadata));
      let text = '';
      await scripted(h, ['LangChain says hi'], async () => {
        for await (const chunk of await chatOpenAI({ useResponsesApi, streaming: true }).stream('hi')) text += chunk.text;
      });
      assert.equal(text, 'LangChain says hi');
    });

    it('bindTools: the call arrives as tool_calls; the ToolMessage goes back', async () => {
      const llm = chatOpenAI({ useResponsesApi }).bindTools([addTool]);
      const ai = await scripted(h, [toolCall('add', { a: 1, b: 2 })], () => llm.invoke('1+2?'));
      assert.equal(ai.tool_calls?.length, 1, JSON.stringify(ai));
      assert.equal(ai.tool_calls![0]!.name, 'add');
      assert.deepEqual(ai.tool_calls![0]!.args, { a: 1, b: 2 });
      const final = await scripted(
        h,
        ['Three'],
        () => llm.invoke([new HumanMessage('1+2?'), ai, new ToolMessage({ content: '3', tool_call_id: ai.tool_calls![0]!.id! })]),
      );
      assert.equal(final.text, 'Three');
      // streamed tool call chunks concatenate to the same call
      let acc: AIMessageChunk | undefined;
      await scripted(h, [toolCall('add', { a: 1, b: 2 })], async () => {
        for await (const c of await chatOpenAI({ useResponsesApi, streaming: true }).bindTools([addTool]).stream('1+2?')) {
          acc = acc ? acc.concat(c) : c;
        }
      });
      assert.deepEqual(acc?.tool_calls?.map((t) => [t.name, t.args]), [['add', { a: 1, b: 2 }]]);
    });

    it('withStructuredOutput (default method and functionCalling): objects that the zod schema accepts', async () => {
      const S = z.object({ n: z.int().min(1).max(9), ok: z.boolean() });
      for (const method of [undefined, 'functionCalling'] as const) {
        const out = await chatOpenAI({ useResponsesApi, maxTokens: 80 }).withStructuredOutput(S, method ? { method } : undefined).invoke(
          'make one',
        );
        assert.ok(S.safeParse(out).success, JSON.stringify(out));
      }
    });

    it('an unknown model and a bad key raise errors with the status', async () => {
      await assert.rejects(
        chatOpenAI({ useResponsesApi, model: 'no-such-model' }).invoke('x'),
        (e: { status?: number }) => e.status === 404,
      );
      await assert.rejects(
        new ChatOpenAI({
          model: MODEL,
          useResponsesApi,
          apiKey: `svc_${'E'.repeat(43)}`,
          configuration: { baseURL: `${h.srv.url}/v1` },
          maxRetries: 0,
        }).invoke('x'),
        (e: { status?: number }) => e.status === 401,
      );
    });
  });
}

describe('OpenAIEmbeddings', () => {
  it('embedQuery and embedDocuments agree; unit vectors', async () => {
    const emb = new OpenAIEmbeddings({ model: EMB, apiKey: token, configuration: { baseURL: `${h.srv.url}/v1` }, maxRetries: 0 });
    const q = await emb.embedQuery('harbour');
    const docs = await emb.embedDocuments(['lighthouse', 'harbour']);
    assert.equal(docs.length, 2);
    assert.ok(Math.abs(Math.hypot(...q) - 1) < 1e-3);
    q.forEach((x, i) => assert.ok(Math.abs(x - docs[1]![i]!) < 1e-4));
  });
});

describe('@langchain/ollama', () => {
  const headers = () => ({ Authorization: `Bearer ${token}` });

  it('ChatOllama invoke, stream and bindTools', async () => {
    const llm = new ChatOllama({ model: MODEL, baseUrl: h.srv.url, headers: headers(), numPredict: 60 });
    const r = await scripted(h, ['Ollama via LangChain'], () => llm.invoke('hi'));
    assert.equal(r.text, 'Ollama via LangChain');
    let text = '';
    await scripted(h, ['Ollama via LangChain'], async () => {
      for await (const c of await llm.stream('hi')) text += c.text;
    });
    assert.equal(text, 'Ollama via LangChain');
    const ai = await scripted(h, [toolCall('add', { a: 4, b: 4 })], () => llm.bindTools([addTool]).invoke('4+4?'));
    assert.deepEqual(ai.tool_calls?.map((t) => [t.name, t.args]), [['add', { a: 4, b: 4 }]]);
    await assert.rejects(new ChatOllama({ model: 'no-such-model', baseUrl: h.srv.url, headers: headers() }).invoke('x'));
    const S = z.object({ n: z.int().min(1).max(9), ok: z.boolean() });
    for (const method of [undefined, 'jsonSchema'] as const) {
      const out = await llm.withStructuredOutput(S, method ? { method } : undefined).invoke('make one');
      assert.ok(S.safeParse(out).success, JSON.stringify(out));
    }
  });

  it('OllamaEmbeddings: unit vectors, one per document', async () => {
    const emb = new OllamaEmbeddings({ model: EMB, baseUrl: h.srv.url, headers: headers() });
    const docs = await emb.embedDocuments(['a', 'b', 'c']);
    assert.equal(docs.length, 3);
    for (const v of docs) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-3);
  });
});
