/**
 * POST /api/chat and /api/generate with the official `ollama` client against a listening server: streamed
 * and whole answers, durations, format with a JSON schema, tool calls, thinking, refused generate fields,
 * custom model profiles, errors before and after the stream began.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Ajv from 'ajv';
import { assertFinal, failAfter, type Harness, ndjson, startHarness } from './harness.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  h.steer(undefined);
  await h?.close();
});

const user = (content: string) => [{ role: 'user', content }];
const greedy = { temperature: 0, num_predict: 12 };

async function rejects(p: Promise<unknown>, status: number, pattern: RegExp) {
  await assert.rejects(p, (e: unknown) => {
    const err = e as { status_code?: number; error?: string; message: string };
    assert.equal(err.status_code, status, err.message);
    assert.match(err.error ?? '', pattern);
    return true;
  });
}

describe('chat', () => {
  it('stream: false answers one object with the message and the duration fields', async () => {
    const r = await h.ollama.chat({ model: 'tiny-llama', messages: user('Tell me about Paris.'), stream: false, options: greedy });
    assert.equal(r.model, 'tiny-llama:test');
    assert.equal(r.message.role, 'assistant');
    assert.equal(typeof r.message.content, 'string');
    assert.ok(r.message.content.length > 0);
    assert.ok(!Number.isNaN(new Date(r.created_at).getTime()));
    assertFinal(r, 12);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.eval_count, 12);
  });

  it('streams NDJSON by default; the pieces join to the same text as the whole answer (greedy)', async () => {
    const whole = await h.ollama.chat({ model: 'tiny-llama', messages: user('Tell me about Paris.'), stream: false, options: greedy });
    const parts = [];
    for await (
      const p of await h.ollama.chat({ model: 'tiny-llama', messages: user('Tell me about Paris.'), stream: true, options: greedy })
    ) parts.push(p);
    assert.ok(parts.length > 2, 'several lines');
    const last = parts.at(-1)!;
    assertFinal(last, 12);
    assert.equal(last.message.content, '');
    for (const p of parts.slice(0, -1)) assert.equal(p.done, false);
    assert.equal(parts.map((p) => p.message.content).join(''), whole.message.content);

    const raw = await h.post('/api/chat', { model: 'tiny-llama', messages: user('hi'), options: { num_predict: 3 } });
    assert.equal(raw.status, 200);
    const lines = await ndjson(raw);
    assert.equal(lines.at(-1)!.done, true);
  });

  it('options: seed reproduces a sampled answer; stop ends it before the stop text', async () => {
    const ask = (seed: number) =>
      h.ollama.chat({
        model: 'tiny-llama',
        messages: user('Say something.'),
        stream: false,
        options: { temperature: 1.2, top_p: 0.95, top_k: 50, seed, num_predict: 16 },
      });
    const [a, b] = [await ask(7), await ask(7)];
    assert.equal(a.message.content, b.message.content);
    const full = (await h.ollama.chat({
      model: 'tiny-llama',
      messages: user('Tell me about Paris.'),
      stream: false,
      options: { temperature: 0, num_predict: 30 },
    })).message.content;
    const stop = full.slice(8, 11);
    assert.ok(full.length > 11);
    assert.ok(stop.trim().length > 0);
    const cut = await h.ollama.chat({
      model: 'tiny-llama',
      messages: user('Tell me about Paris.'),
      stream: false,
      options: { temperature: 0, num_predict: 30, stop: [stop] },
    });
    assert.equal(cut.message.content, full.slice(0, full.indexOf(stop)));
    assert.equal(cut.done_reason, 'stop');
  });

  it('format with a JSON schema: the random model answers JSON that validates', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 }, population: { type: 'integer' }, capital: { type: 'boolean' } },
      required: ['city', 'population', 'capital'],
      additionalProperties: false,
    };
    const validate = new Ajv().compile(schema);
    for (const seed of [1, 2, 3]) {
      const r = await h.ollama.chat({
        model: 'tiny-llama',
        messages: user('Describe Paris as JSON.'),
        format: schema,
        stream: false,
        options: { seed, temperature: 1, num_predict: 60 },
      });
      const value = JSON.parse(r.message.content);
      assert.ok(validate(value), `${r.message.content}: ${JSON.stringify(validate.errors)}`);
    }
    const json = await h.ollama.generate({
      model: 'tiny-llama',
      prompt: 'JSON please',
      format: 'json',
      stream: false,
      options: { seed: 4, num_predict: 40 },
    });
    assert.equal(typeof JSON.parse(json.response ?? ''), 'object');
  });

  it('tools: the call the model makes comes back in message.tool_calls (whole and streamed)', async () => {
    const tools = [{
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    }];
    await h.steered('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', async () => {
      const r = await h.ollama.chat({ model: 'tiny-llama', messages: user('Weather in Paris?'), tools, stream: false });
      assert.deepEqual(r.message.tool_calls, [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }]);
      assert.equal(r.message.content, '');
      assert.equal(r.done_reason, 'stop');
      const parts = [];
      for await (const p of await h.ollama.chat({ model: 'tiny-llama', messages: user('Weather in Paris?'), tools, stream: true })) {
        parts.push(p);
      }
      const calls = parts.flatMap((p) => p.message.tool_calls ?? []);
      assert.deepEqual(calls, [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }]);
      assert.equal(parts.map((p) => p.message.content).join(''), '', 'no markup leaks into content');
    });
    // the call and its result go back to the model in the next turn (template renders them)
    const next = await h.ollama.chat({
      model: 'tiny-llama',
      tools,
      stream: false,
      options: greedy,
      messages: [
        ...user('Weather in Paris?'),
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
        { role: 'tool', content: '{"temp": 21}', tool_name: 'get_weather' },
      ],
    });
    const first = await h.ollama.chat({
      model: 'tiny-llama',
      messages: user('Weather in Paris?'),
      tools,
      stream: false,
      options: { num_predict: 1 },
    });
    assert.ok(next.prompt_eval_count > first.prompt_eval_count + 10, 'history with the call and its result is in the prompt');
  });

  it('think: true puts the <think> block in message.thinking (whole and streamed)', async () => {
    await h.steered('<think>\nThe user greets me.\n</think>\n\nHello there', async () => {
      const r = await h.ollama.chat({ model: 'tiny-llama', messages: user('hi'), think: true, stream: false });
      assert.equal(r.message.thinking, 'The user greets me.');
      assert.equal(r.message.content, 'Hello there');
      const parts = [];
      for await (const p of await h.ollama.chat({ model: 'tiny-llama', messages: user('hi'), think: true, stream: true })) parts.push(p);
      assert.equal(parts.map((p) => p.message.thinking ?? '').join(''), 'The user greets me.');
      assert.equal(parts.map((p) => p.message.content).join(''), 'Hello there');
      const g = await h.ollama.generate({ model: 'tiny-llama', prompt: 'hi', think: true, stream: false });
      assert.deepEqual([g.thinking, g.response], ['The user greets me.', 'Hello there']);
    });
  });

  it('a custom model: its system prompt, template and parameters apply (template opening <think> → thinking)', async () => {
    const template =
      '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}';
    const createThinker = (numPredict: number) =>
      h.ollama.create({
        model: 'thinker',
        from: 'tiny-llama',
        system: 'You think a lot before answering.',
        template,
        parameters: { num_predict: numPredict, temperature: 0 },
      });
    await createThinker(5);
    const r = await h.ollama.chat({ model: 'thinker', messages: user('hi'), think: true, stream: false });
    assert.equal(r.eval_count, 5, 'num_predict from the custom model');
    assert.ok((r.message.thinking ?? '').length > 0, 'output inside the template-opened block is thinking');
    const plain = await h.ollama.chat({ model: 'tiny-llama', messages: user('hi'), stream: false, options: { num_predict: 1 } });
    assert.ok(r.prompt_eval_count > plain.prompt_eval_count, 'system prompt rendered');
    const overridden = await h.ollama.chat({ model: 'thinker', messages: user('hi'), stream: false, options: { num_predict: 2 } });
    assert.equal(overridden.eval_count, 2, 'request options win over the model parameters');
    // re-created with other parameters: the next request sees them (resolutions are remembered per model version)
    await createThinker(3);
    assert.equal(
      (await h.ollama.chat({ model: 'thinker', messages: user('hi'), think: true, stream: false })).eval_count,
      3,
      'no stale parameters after re-create',
    );
    await h.ollama.delete({ model: 'thinker' });
    await rejects(h.ollama.chat({ model: 'thinker', messages: user('hi'), stream: false }), 404, /not found/);
  });

  it('errors before the stream: 404 unknown model, 400 images without vision, 400 bad format', async () => {
    await rejects(h.ollama.chat({ model: 'no-such-model', messages: user('x') }), 404, /not found/);
    await rejects(
      h.ollama.chat({ model: 'tiny-llama', messages: [{ role: 'user', content: 'x', images: ['aGVsbG8='] }] }),
      400,
      /does not support images/,
    );
    await rejects(h.ollama.chat({ model: 'tiny-llama', messages: user('x'), format: 'yaml' }), 400, /format/);
    await rejects(h.ollama.chat({ model: 'tiny-bert-embed', messages: user('x') }), 400, /does not support chat/);
    const res = await h.post('/api/chat', { messages: user('x') });
    assert.equal(res.status, 400);
    assert.equal(typeof (await res.json()).error, 'string');
  });

  it('a failure after the stream began is an {"error"} line', async () => {
    h.steer(() => [failAfter(3)]); // a new count for each request
    try {
      const res = await h.post('/api/chat', { model: 'tiny-llama', messages: user('hi'), options: { num_predict: 20, temperature: 0 } });
      assert.equal(res.status, 200);
      const lines = await ndjson(res);
      assert.ok(lines.length >= 2, 'tokens came first');
      assert.equal(typeof lines.at(-1)!.error, 'string');
      assert.equal(lines.some((l) => l.done === true), false);
      await assert.rejects(async () => {
        for await (
          const _ of await h.ollama.chat({ model: 'tiny-llama', messages: user('hi'), stream: true, options: { num_predict: 20 } })
        );
      }, /Internal server error/);
    } finally {
      h.steer(undefined);
    }
  });
});

describe('generate', () => {
  it('stream: false with system; streamed pieces join to the same response', async () => {
    const whole = await h.ollama.generate({
      model: 'tiny-llama',
      prompt: 'Why is the sky blue?',
      system: 'Be brief.',
      stream: false,
      options: greedy,
    });
    assertFinal(whole, 12);
    assert.equal(typeof whole.response, 'string');
    const bare = await h.ollama.generate({
      model: 'tiny-llama',
      prompt: 'Why is the sky blue?',
      stream: false,
      options: { num_predict: 1 },
    });
    assert.ok(whole.prompt_eval_count > bare.prompt_eval_count, 'system rendered into the prompt');
    const parts = [];
    for await (
      const p of await h.ollama.generate({
        model: 'tiny-llama',
        prompt: 'Why is the sky blue?',
        system: 'Be brief.',
        stream: true,
        options: greedy,
      })
    ) parts.push(p);
    assertFinal(parts.at(-1)!, 12);
    assert.equal(parts.map((p) => p.response).join(''), whole.response);
  });

  for (const [field, value] of [['raw', true], ['suffix', 'return x'], ['template', '{{ .Prompt }}'], ['context', [1, 2, 3]]] as const) {
    it(`refuses ${field} with a 400 naming it`, async () => {
      await rejects(h.ollama.generate({ model: 'tiny-llama', prompt: 'x', [field]: value } as never), 400, new RegExp(`\\b${field}\\b`));
    });
  }
});
