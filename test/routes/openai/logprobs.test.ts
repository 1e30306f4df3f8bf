/**
 * Token log-probabilities in both dialects, over a listening server on the tiny random model: OpenAI chat
 * and completions (whole and streamed, through the official `openai` client) and Ollama chat/generate.
 * Judged by what must hold for any model: alternatives sorted, the greedy token is the most likely one,
 * probabilities sum to at most 1, temperature sharpens, a constrained token never has a masked alternative,
 * and the tokens spell the text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { type Harness, ndjson, startHarness } from '../ollama/harness.ts';

let h: Harness;
let openai: OpenAI;
const MODEL = 'tiny-llama:test';
const user = (content: string) => [{ role: 'user' as const, content }];

before(async () => {
  h = await startHarness();
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => h?.close());

type Tok = {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
};

function checkToken(t: Tok, k: number, greedy: boolean) {
  assert.ok(Number.isFinite(t.logprob) && t.logprob <= 0, JSON.stringify(t));
  assert.deepEqual(new TextEncoder().encode(t.token).length > 0 || t.bytes!.length === 0, true);
  assert.equal(t.top_logprobs.length, k);
  for (let i = 1; i < t.top_logprobs.length; i++) assert.ok(t.top_logprobs[i - 1].logprob >= t.top_logprobs[i].logprob, 'sorted');
  const mass = t.top_logprobs.reduce((a, x) => a + Math.exp(x.logprob), 0);
  assert.ok(mass <= 1 + 1e-5, `mass ${mass}`);
  if (greedy && k > 0) {
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6);
  }
  if (k > 0) assert.ok(t.logprob <= t.top_logprobs[0].logprob + 1e-6);
}

describe('logprobs, OpenAI dialect', () => {
  it('chat: one entry per generated token, top_logprobs sorted, the greedy token first; tokens spell the text', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL,
      messages: user('hello'),
      max_tokens: 12,
      temperature: 0,
      logprobs: true,
      top_logprobs: 5,
    });
    const c = r.choices[0];
    const content = c.logprobs!.content! as Tok[];
    assert.ok(content.length > 0);
    assert.equal(content.length, r.usage!.completion_tokens - (c.finish_reason === 'stop' ? 1 : 0));
    for (const t of content) checkToken(t, 5, true);
    const bytes = content.flatMap((t) => t.bytes!);
    assert.equal(new TextDecoder().decode(Uint8Array.from(bytes)), c.message.content);
  });

  it('logprobs without top_logprobs: no alternatives; top_logprobs without logprobs: 400; above 20: 400', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages: user('a'), max_tokens: 4, temperature: 0, logprobs: true });
    for (const t of r.choices[0].logprobs!.content! as Tok[]) checkToken(t, 0, true);
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: user('a'), top_logprobs: 3 }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.message),
    );
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: user('a'), logprobs: true, top_logprobs: 21 }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.message),
    );
    const plain = await openai.chat.completions.create({ model: MODEL, messages: user('a'), max_tokens: 2 });
    assert.equal(plain.choices[0].logprobs, null);
  });

  it('streamed: the chunks carry the same logprobs as the whole answer', async () => {
    const params = { model: MODEL, messages: user('stream'), max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3 } as const;
    const whole = await openai.chat.completions.create(params);
    const stream = await openai.chat.completions.create({ ...params, stream: true });
    const got: Tok[] = [];
    for await (const ch of stream) got.push(...((ch.choices[0]?.logprobs?.content ?? []) as Tok[]));
    assert.deepEqual(
      got.map((t) => [t.token, t.logprob.toFixed(5)]),
      (whole.choices[0].logprobs!.content as Tok[]).map((t) => [t.token, t.logprob.toFixed(5)]),
    );
  });

  it('temperature: logprobs come from the tempered distribution that was sampled (sharper below 1)', async () => {
    const at = async (temperature: number) => {
      const r = await openai.chat.completions.create({
        model: MODEL,
        messages: user('temp'),
        max_tokens: 1,
        temperature,
        seed: 7,
        logprobs: true,
        top_logprobs: 20,
      });
      return (r.choices[0].logprobs!.content as Tok[])[0];
    };
    const t1 = await at(1);
    const tLow = await at(0.25);
    for (const t of [t1, tLow]) checkToken(t, 20, false);
    // same logits, divided by 0.25: the top alternative's log-probability rises, the spread widens by 4×
    assert.equal(t1.top_logprobs[0].token, tLow.top_logprobs[0].token);
    assert.ok(tLow.top_logprobs[0].logprob > t1.top_logprobs[0].logprob);
    const spread = (t: Tok) => t.top_logprobs[0].logprob - t.top_logprobs[1].logprob;
    assert.ok(Math.abs(spread(tLow) - 4 * spread(t1)) < 1e-3 * Math.max(1, spread(tLow)), `${spread(tLow)} vs ${spread(t1)}`);
  });

  it('structured output: logprobs after the constraint (alternatives are only allowed tokens; the distribution renormalised)', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
    const r = await openai.chat.completions.create({
      model: MODEL,
      messages: user('json'),
      max_tokens: 30,
      temperature: 0,
      logprobs: true,
      top_logprobs: 20,
      response_format: { type: 'json_schema', json_schema: { name: 's', schema, strict: true } },
    });
    const content = r.choices[0].logprobs!.content as Tok[];
    // the first token must open the object: every alternative starts with "{"
    assert.ok(content[0].top_logprobs.length >= 1);
    for (const a of content[0].top_logprobs) assert.match(a.token, /^\{/);
    const mass = content[0].top_logprobs.reduce((a, x) => a + Math.exp(x.logprob), 0);
    assert.ok(mass <= 1 + 1e-5);
    for (const t of content) checkToken(t, t.top_logprobs.length, true);
  });

  it('completions: the legacy logprobs object, whole and streamed', async () => {
    const r = await openai.completions.create({ model: MODEL, prompt: 'once upon', max_tokens: 8, temperature: 0, logprobs: 3 });
    const lp = r.choices[0].logprobs!;
    assert.equal(lp.tokens!.length, lp.token_logprobs!.length);
    assert.equal(lp.tokens!.join(''), r.choices[0].text);
    lp.top_logprobs!.forEach((top, i) => {
      const best = Object.entries(top).sort((a, b) => b[1] - a[1])[0];
      assert.ok(Math.abs(best[1] - lp.token_logprobs![i]!) < 1e-6);
    });
    assert.deepEqual(lp.text_offset![0], 0);
    const stream = await openai.completions.create({
      model: MODEL,
      prompt: 'once upon',
      max_tokens: 8,
      temperature: 0,
      logprobs: 3,
      stream: true,
    });
    const toks: string[] = [];
    for await (const ch of stream) toks.push(...(ch.choices[0]?.logprobs?.tokens ?? []));
    assert.deepEqual(toks, lp.tokens);
    const bad = await h.post('/v1/completions', { model: MODEL, prompt: 'x', logprobs: 2, echo: true });
    assert.equal(bad.status, 400);
  });
});

describe('logprobs, Ollama dialect', () => {
  it('/api/chat and /api/generate: logprobs and top_logprobs, streamed and whole', async () => {
    const whole = await (await h.post('/api/chat', {
      model: MODEL,
      messages: user('hi'),
      stream: false,
      logprobs: true,
      top_logprobs: 4,
      options: { temperature: 0, num_predict: 8 },
    })).json();
    assert.ok(whole.logprobs.length > 0);
    for (const t of whole.logprobs) checkToken(t, 4, true);
    assert.equal(new TextDecoder().decode(Uint8Array.from(whole.logprobs.flatMap((t: Tok) => t.bytes))), whole.message.content);
    const lines = await ndjson(
      await h.post('/api/chat', {
        model: MODEL,
        messages: user('hi'),
        logprobs: true,
        top_logprobs: 4,
        options: { temperature: 0, num_predict: 8 },
      }),
    );
    const streamed = lines.flatMap((l) => l.logprobs ?? []);
    assert.deepEqual(streamed.map((t) => t.token), whole.logprobs.map((t: Tok) => t.token));
    const gen = await (await h.post('/api/generate', {
      model: MODEL,
      prompt: 'hi',
      stream: false,
      logprobs: true,
      options: { temperature: 0, num_predict: 5 },
    })).json();
    assert.ok(gen.logprobs.length > 0);
    for (const t of gen.logprobs) assert.ok(Number.isFinite(t.logprob) && t.top_logprobs === undefined);
    const none = await (await h.post('/api/generate', { model: MODEL, prompt: 'hi', stream: false, options: { num_predict: 2 } })).json();
    assert.equal(none.logprobs, undefined);
  });
});
