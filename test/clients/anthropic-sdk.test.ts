/**
 * The official `@anthropic-ai/sdk` driven as a user drives it, against one listening server with the fixture
 * models and a key made through the admin API (sent as x-api-key, and as a Bearer token with authToken):
 * messages.create, the messages.stream helper (text events, finalMessage, finalText), the beta tool runner
 * (a real two-turn tool loop), countTokens, models.list pagination and retrieve, and the SDK's typed errors.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { type Harness, scripted, serverWithKey, toolCall } from './steer.ts';

let h: Harness;
let client: Anthropic;
let token = '';
const MODEL = 'tiny-llama:test';
const user = (content: string) => [{ role: 'user' as const, content }];

serverWithKey('anthropic-sdk', (s, key) => {
  h = s;
  token = key;
  client = new Anthropic({ baseURL: h.srv.url, apiKey: token, maxRetries: 0 });
});

describe('anthropic SDK: messages', () => {
  it('create with a system prompt; authToken (Bearer) works the same', async () => {
    const r = await scripted(
      h,
      ['Hi there'],
      () => client.messages.create({ model: MODEL, max_tokens: 20, system: 'Be brief.', messages: user('hi') }),
    );
    assert.deepEqual(r.content, [{ type: 'text', text: 'Hi there' }]);
    assert.equal(r.stop_reason, 'end_turn');
    assert.match(r.id, /^msg_/);
    const bearer = new Anthropic({ baseURL: h.srv.url, apiKey: null, authToken: token, maxRetries: 0 });
    const b = await bearer.messages.create({ model: MODEL, max_tokens: 2, messages: user('hi') });
    assert.equal(b.type, 'message');
  });

  it('messages.stream: text events, finalText, finalMessage with usage', async () => {
    let text = '';
    const stream = await scripted(h, ['Streaming works'], async () => {
      const s = client.messages.stream({ model: MODEL, max_tokens: 30, messages: user('go') });
      s.on('text', (d) => (text += d));
      await s.done();
      return s;
    });
    assert.equal(text, 'Streaming works');
    assert.equal(await stream.finalText(), 'Streaming works');
    const m = await stream.finalMessage();
    assert.equal(m.stop_reason, 'end_turn');
    assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
  });

  it('beta tool runner: the tool runs, its result goes back, the loop ends on the final text', { timeout: 60_000 }, async () => {
    const seen: unknown[] = [];
    const add = betaTool({
      name: 'add',
      description: 'adds two numbers',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      run: (input) => {
        seen.push(input);
        return String((input.a as number) + (input.b as number));
      },
    });
    const final = await scripted(
      h,
      [toolCall('add', { a: 4, b: 5 }), 'The sum is 9'],
      () => client.beta.messages.toolRunner({ model: MODEL, max_tokens: 60, messages: user('4+5?'), tools: [add] }).runUntilDone(),
    );
    assert.deepEqual(seen, [{ a: 4, b: 5 }]);
    assert.deepEqual(final.content.map((b) => b.type === 'text' ? b.text : b.type), ['The sum is 9']);
    // streamed: each turn is a message stream
    const texts: string[] = [];
    await scripted(h, [toolCall('add', { a: 1, b: 1 }), 'Two'], async () => {
      for await (
        const turn of client.beta.messages.toolRunner({ model: MODEL, max_tokens: 60, messages: user('1+1?'), tools: [add], stream: true })
      ) {
        for await (const e of turn) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') texts.push(e.delta.text);
      }
    });
    assert.deepEqual(seen, [{ a: 4, b: 5 }, { a: 1, b: 1 }]);
    assert.equal(texts.join(''), 'Two');
  });

  it('countTokens equals the input_tokens of the same request', async () => {
    const req = { model: MODEL, system: 'Terse.', messages: user('count me') };
    const counted = await client.messages.countTokens(req);
    const r = await client.messages.create({ ...req, max_tokens: 1 });
    assert.equal(counted.input_tokens, r.usage.input_tokens);
  });

  it('models.list iterates; retrieve by id', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes(MODEL), ids.join(','));
    const m = await client.models.retrieve(MODEL);
    assert.equal(m.id, MODEL);
    assert.equal(m.type, 'model');
  });
});

describe('anthropic SDK: errors', () => {
  it('404 NotFoundError, 400 BadRequestError, 401 AuthenticationError with messages', async () => {
    await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 5, messages: user('x') }), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.match(e.message, /no-such-model/);
      return true;
    });
    await assert.rejects(
      client.messages.stream({ model: 'no-such-model', max_tokens: 5, messages: user('x') }).finalMessage(),
      Anthropic.NotFoundError,
    );
    await assert.rejects(
      client.messages.create({ model: MODEL, max_tokens: -1, messages: user('x') }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && e.status === 400 && e.message.length > 0,
    );
    await assert.rejects(client.models.retrieve('no-such-model'), Anthropic.NotFoundError);
    const bad = new Anthropic({ baseURL: h.srv.url, apiKey: `svc_${'C'.repeat(43)}`, maxRetries: 0 });
    await assert.rejects(
      bad.messages.create({ model: MODEL, max_tokens: 5, messages: user('x') }),
      (e: unknown) => e instanceof Anthropic.AuthenticationError && e.status === 401,
    );
    const foreign = new Anthropic({ baseURL: h.srv.url, apiKey: 'sk-ant-foreign', maxRetries: 0 });
    await assert.rejects(foreign.models.list(), Anthropic.AuthenticationError);
  });
});
