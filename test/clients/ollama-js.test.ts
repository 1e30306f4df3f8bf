/**
 * The official `ollama` JS client driven as a user drives it, against one listening server with the fixture
 * models and a key sent as a Bearer header: pull (streamed progress and not), list, show, ps, chat and
 * generate (whole and streamed, tools, format, think), embed, create from a catalog model, copy, delete,
 * and its ResponseError (status_code, error text) for 401, 404 and 400.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { type Harness, scripted, serverWithKey, toolCall } from './steer.ts';

let h: Harness;
let ollama: Ollama;
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';

serverWithKey('ollama-js', (s, key) => {
  h = s;
  ollama = new Ollama({ host: h.srv.url, headers: { Authorization: `Bearer ${key}` } });
});

const isResponseError = (status: number, re?: RegExp) => (e: unknown) => {
  const err = e as { name?: string; status_code?: number; error?: string };
  assert.equal(err.name, 'ResponseError', String(e));
  assert.equal(err.status_code, status);
  assert.equal(typeof err.error, 'string');
  if (re) assert.match(err.error!, re);
  return true;
};

describe('ollama-js: model management', () => {
  it('pull streamed: progress objects end with success; pull not streamed: one success', async () => {
    const statuses: string[] = [];
    for await (const p of await ollama.pull({ model: MODEL, stream: true })) {
      statuses.push(p.status);
      if (p.total !== undefined) assert.ok(p.completed === undefined || p.completed <= p.total);
    }
    assert.equal(statuses.at(-1), 'success');
    assert.equal((await ollama.pull({ model: EMB })).status, 'success');
  });

  it('pull of a hub reference (<host>/<owner>/<repo>): listed, then it chats; unknown names are 404 for pull, show, copy, delete', async () => {
    const ref = `${new URL(h.hub.url).host}/svc-test/tiny-llama`;
    const statuses: string[] = [];
    for await (const p of await ollama.pull({ model: ref, stream: true })) statuses.push(p.status);
    assert.equal(statuses.at(-1), 'success');
    assert.ok((await ollama.list()).models.some((m) => m.name.startsWith(ref)));
    assert.equal((await ollama.chat({ model: ref, messages: [{ role: 'user', content: 'x' }], options: { num_predict: 2 } })).done, true);
    await assert.rejects(ollama.pull({ model: 'no-such-model' }), isResponseError(404));
    await assert.rejects(
      (async () => {
        for await (const _ of await ollama.pull({ model: 'no-such-model', stream: true })) void _;
      })(),
      isResponseError(404),
    );
    await assert.rejects(ollama.show({ model: 'no-such-model' }), isResponseError(404));
    await assert.rejects(ollama.copy({ source: 'no-such-model', destination: 'x' }), isResponseError(404));
    await assert.rejects(ollama.delete({ model: 'no-such-model' }), isResponseError(404));
  });

  it('list: the pulled models with size, digest, modified_at and details', async () => {
    const { models } = await ollama.list();
    const m = models.find((x) => x.name === MODEL);
    assert.ok(m, models.map((x) => x.name).join(','));
    assert.ok(m.size > 0);
    assert.match(m.digest, /^[0-9a-f]{64}$/);
    assert.ok(m.modified_at instanceof Date || typeof m.modified_at === 'string');
    assert.equal(m.details.family, 'llama');
  });

  it('show: capabilities, details, template and model_info', async () => {
    const s = await ollama.show({ model: MODEL });
    assert.ok(s.capabilities?.includes('completion'));
    assert.equal(s.details.family, 'llama');
    assert.equal(typeof s.template, 'string');
    assert.ok(s.model_info && Object.keys(s.model_info).length > 0);
  });

  it('create from a catalog model with a system prompt, copy, delete', async () => {
    const statuses: string[] = [];
    for await (
      const p of await ollama.create({
        model: 'qa-pirate',
        from: MODEL,
        system: 'You are a pirate.',
        parameters: { temperature: 0 },
        stream: true,
      })
    ) statuses.push(p.status);
    assert.equal(statuses.at(-1), 'success');
    const shown = await ollama.show({ model: 'qa-pirate' });
    assert.equal(shown.system, 'You are a pirate.');
    assert.equal((await ollama.copy({ source: 'qa-pirate', destination: 'qa-pirate-2' })).status, 'success');
    const names = (await ollama.list()).models.map((m) => m.name);
    assert.ok(names.some((n) => n.startsWith('qa-pirate-2')), names.join(','));
    const r = await ollama.generate({ model: 'qa-pirate-2', prompt: 'hi', options: { num_predict: 2 } });
    assert.equal(r.done, true);
    assert.equal((await ollama.delete({ model: 'qa-pirate-2' })).status, 'success');
    await assert.rejects(ollama.show({ model: 'qa-pirate-2' }), isResponseError(404));
    await ollama.delete({ model: 'qa-pirate' });
  });
});

describe('ollama-js: inference', () => {
  it('chat whole and streamed; ps lists the loaded model', async () => {
    const whole = await scripted(h, ['Ahoy there'], () => ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(whole.message.role, 'assistant');
    assert.equal(whole.message.content, 'Ahoy there');
    assert.equal(whole.done_reason, 'stop');
    assert.ok(whole.eval_count > 0 && whole.total_duration > 0);
    let text = '';
    let last;
    await scripted(h, ['Ahoy there'], async () => {
      for await (const part of await ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })) {
        text += part.message.content;
        last = part;
      }
    });
    assert.equal(text, 'Ahoy there');
    assert.equal((last as unknown as { done: boolean }).done, true);
    const ps = await ollama.ps();
    assert.ok(ps.models.some((m) => m.name === MODEL), JSON.stringify(ps));
  });

  it('chat with tools: tool_calls with parsed arguments; the tool message goes back', async () => {
    const tools = [{
      type: 'function',
      function: {
        name: 'add',
        description: 'adds',
        parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      },
    }];
    const r = await scripted(
      h,
      [toolCall('add', { a: 1, b: 2 })],
      () => ollama.chat({ model: MODEL, messages: [{ role: 'user', content: '1+2' }], tools, options: { num_predict: 60 } }),
    );
    const call = r.message.tool_calls?.[0];
    assert.ok(call, JSON.stringify(r.message));
    assert.equal(call.function.name, 'add');
    assert.deepEqual(call.function.arguments, { a: 1, b: 2 });
    const next = await scripted(
      h,
      ['3'],
      () =>
        ollama.chat({
          model: MODEL,
          tools,
          messages: [{ role: 'user', content: '1+2' }, r.message, { role: 'tool', content: '3', tool_name: 'add' } as never],
        }),
    );
    assert.equal(next.message.content, '3');
    assert.ok(next.prompt_eval_count > r.prompt_eval_count);
  });

  it('chat with format json: the content parses', async () => {
    const r = await ollama.chat({
      model: MODEL,
      messages: [{ role: 'user', content: 'json' }],
      format: 'json',
      options: { num_predict: 60, seed: 1, temperature: 1 },
    });
    assert.equal(typeof JSON.parse(r.message.content), 'object');
  });

  it('generate whole and streamed; think splits the thinking', async () => {
    const r = await scripted(h, ['Fine'], () => ollama.generate({ model: MODEL, prompt: 'how are you' }));
    assert.equal(r.response, 'Fine');
    assert.equal(r.done, true);
    let text = '';
    await scripted(h, ['Fine'], async () => {
      for await (const p of await ollama.generate({ model: MODEL, prompt: 'how are you', stream: true })) text += p.response;
    });
    assert.equal(text, 'Fine');
    const t = await scripted(
      h,
      ['<think>hmm</think>Yes'],
      () => ollama.chat({ model: MODEL, think: true, messages: [{ role: 'user', content: 'q' }] }),
    );
    assert.equal(t.message.thinking?.trim(), 'hmm');
    assert.equal(t.message.content.trim(), 'Yes');
  });

  it('embed: one unit vector per input', async () => {
    const r = await ollama.embed({ model: EMB, input: ['a', 'b'] });
    assert.equal(r.embeddings.length, 2);
    for (const v of r.embeddings) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-3);
    const legacy = await ollama.embeddings({ model: EMB, prompt: 'a' });
    assert.equal(legacy.embedding.length, r.embeddings[0]!.length);
  });
});

describe('ollama-js: errors', () => {
  it('unknown model 404, bad field 400, bad key 401: ResponseError with status_code and text', async () => {
    await assert.rejects(
      ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
      isResponseError(404, /no-such-model/),
    );
    // a streamed request that fails before streaming throws the same way
    await assert.rejects(
      (async () => {
        for await (const _ of await ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }], stream: true })) {
          void _;
        }
      })(),
      isResponseError(404),
    );
    await assert.rejects(ollama.embed({ model: MODEL, input: 'x' }), isResponseError(400));
    await assert.rejects(
      ollama.chat({ model: MODEL, messages: [{ role: 'user', content: 'x' }], options: { temperature: 'hot' } } as never),
      isResponseError(400),
    );
    await assert.rejects(ollama.generate({ model: MODEL, prompt: 'x', format: 'yaml' } as never), isResponseError(400));
    const bad = new Ollama({ host: h.srv.url, headers: { Authorization: `Bearer svc_${'B'.repeat(43)}` } });
    await assert.rejects(bad.list(), isResponseError(401));
    const none = new Ollama({ host: h.srv.url });
    await assert.rejects(none.chat({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }), isResponseError(401));
    // version stays open
    assert.equal(typeof (await none.version()).version, 'string');
  });
});
