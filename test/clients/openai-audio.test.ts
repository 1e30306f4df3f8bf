/**
 * The official `openai` SDK's audio.transcriptions as a user drives it (tiny random-weight Whisper fixture,
 * speech made by espeak-ng): the default JSON call, `stream: true` read through the SDK's stream (the
 * transcript.text.delta events join to the done event's text, which equals the whole call's text), and the
 * typed errors for an unknown model and a streamed subtitle format.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { type SpeechFixture, speechSilenceSpeech } from '../routes/media/make-media.ts';
import { FIXTURE_CATALOG } from '../support/hub-stand-in.ts';
import { type Harness, serverWithKey } from './steer.ts';

let h: Harness;
let openai: OpenAI;
let fx: SpeechFixture;
const MODEL = 'tiny-whisper:test';

serverWithKey('audio', (s, key) => {
  h = s;
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: key, maxRetries: 0 });
  fx = speechSilenceSpeech();
});

const file = () => toFile(readFileSync(fx.path), 'speech.wav');

describe('openai SDK: audio.transcriptions', () => {
  it('whole, then stream: true: the deltas join to the done text, equal to the whole text', async () => {
    const whole = await openai.audio.transcriptions.create({ model: MODEL, file: await file(), language: 'en' });
    assert.ok(whole.text.length > 0, 'the random model says something');
    const stream = await openai.audio.transcriptions.create({ model: MODEL, file: await file(), language: 'en', stream: true });
    let deltas = '';
    let done: string | undefined;
    for await (const e of stream) {
      if (e.type === 'transcript.text.delta') deltas += e.delta;
      else if (e.type === 'transcript.text.done') done = e.text;
    }
    assert.equal(done, whole.text);
    assert.equal(deltas, whole.text);
  });

  it('whisper-1 is the default Whisper catalog model (here whisper:tiny points at the fixture weights)', async () => {
    const fixture = FIXTURE_CATALOG.find((e) => e.name === MODEL)!;
    h.srv.models.catalog.register({ ...fixture, name: 'whisper:tiny', aliases: [] });
    const viaAlias = await openai.audio.transcriptions.create({ model: 'whisper-1', file: await file(), language: 'en' });
    const direct = await openai.audio.transcriptions.create({ model: 'whisper:tiny', file: await file(), language: 'en' });
    assert.ok(direct.text.length > 0);
    assert.equal(viaAlias.text, direct.text);
    const tr = await openai.audio.translations.create({ model: 'whisper-1', file: await file() });
    assert.equal(typeof tr.text, 'string');
  });

  it('errors: unknown model NotFoundError; stream with srt BadRequestError', async () => {
    await assert.rejects(openai.audio.transcriptions.create({ model: 'no-such-model', file: await file() }), OpenAI.NotFoundError);
    await assert.rejects(
      openai.audio.transcriptions.create({ model: MODEL, file: await file(), stream: true, response_format: 'srt' } as never),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /stream/.test(e.message),
    );
  });
});
