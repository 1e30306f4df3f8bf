/**
 * Image chat on the tiny random-weight SmolVLM-shaped fixture (tiny-vlm) over a listening server, through
 * the official `openai`, `ollama` and Anthropic clients. The judge is transformers.js itself, called
 * directly: the same PNG decoded by sharp (RawImage), the model's own processor and greedy `generate` —
 * the server's greedy answer must be the very same text. The PNG is made by ImageMagick.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { type Harness, startHarness } from '../ollama/harness.ts';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { FIXTURE_MODELS_DIR } from '../../support/hub-stand-in.ts';
import { pngHeader } from '../../support/png-header.ts';

const MODEL = 'tiny-vlm:test';
const PROMPT = 'What is in the picture?';
const N = 12;
// the SDK's types in this version leave temperature out of create(); the wire field is the API's own
const greedy = { temperature: 0 } as unknown as Record<string, never>;
let h: Harness;
let openai: OpenAI;
let png: Uint8Array;
let b64: string;
let expected: string;
let imageServer: ReturnType<typeof createServer>;
let imageUrl: string;

/** The reference: transformers.js on the fixture directory, no server code involved. */
async function directGreedy(bytes: Uint8Array, text: string, maxNew: number): Promise<string> {
  const { tf } = await initBackend('cpu');
  const dir = `${FIXTURE_MODELS_DIR}/tiny-vlm`;
  const processor = await tf.AutoProcessor.from_pretrained(dir);
  const model = await tf.AutoModelForImageTextToText.from_pretrained(dir, { dtype: 'fp32' } as never);
  const image = await tf.RawImage.fromBlob(new Blob([Uint8Array.from(bytes)]));
  const prompt = processor.apply_chat_template(
    [{ role: 'user', content: [{ type: 'image' }, { type: 'text', text }] }] as never,
    { add_generation_prompt: true } as never,
  ) as unknown as string;
  const inputs = await (processor as unknown as (t: string, i: unknown[]) => Promise<{ input_ids: { dims: number[] } }>)(prompt, [image]);
  const out = (await model.generate({ ...inputs, max_new_tokens: maxNew, do_sample: false } as never)) as unknown as {
    slice(...a: unknown[]): unknown;
  };
  const n = inputs.input_ids.dims[1];
  const [decoded] = processor.batch_decode(out.slice(null, [n, null]) as never, { skip_special_tokens: true });
  await model.dispose();
  return decoded!;
}

before(async () => {
  // 50×40 gradient: split by the processor into 2×2 tiles plus the global image
  png = new Uint8Array(execFileSync('convert', ['-size', '50x40', 'gradient:red-blue', '-depth', '8', 'png:-']));
  b64 = Buffer.from(png).toString('base64');
  expected = await directGreedy(png, PROMPT, N);
  imageServer = createServer((req, res) => {
    if (req.url === '/redirect') {
      return void res.writeHead(302, { location: `http://127.0.0.1:${(imageServer.address() as AddressInfo).port}/picture.png` }).end();
    }
    res.writeHead(200, { 'content-type': 'image/png' }).end(png);
  });
  await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
  imageUrl = `http://localhost:${(imageServer.address() as AddressInfo).port}/picture.png`;
  // image URLs may name localhost only: 127.0.0.1 stays outside the policy
  h = await startHarness({ chatImageAllowedHosts: ['localhost'] });
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await h?.close();
  imageServer?.close();
});

describe('vision chat on the tiny SmolVLM fixture', () => {
  it('the reference answer is not empty (the random model says something about the image)', () => {
    assert.ok(expected.length > 0);
  });

  it('show reports vision and the image encoder', async () => {
    await h.ollama.pull({ model: MODEL }); // show reads config.json of the local copy
    const r = await h.ollama.show({ model: MODEL });
    assert.ok(r.capabilities.includes('vision'), JSON.stringify(r.capabilities));
    // the decoder's and the image encoder's shapes, from the fixture's config.json (a JSON object on the wire)
    const info = r.model_info as unknown as Record<string, unknown>;
    assert.equal(info['idefics3.embedding_length'], 32);
    assert.equal(info['idefics3.vision.patch_size'], 8);
    assert.equal(info['idefics3.vision.image_size'], 32);
  });

  it('OpenAI image_url data URL: greedy output equals transformers.js called directly', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL,
      temperature: 0,
      max_tokens: N,
      messages: [{
        role: 'user',
        content: [{ type: 'text', text: PROMPT }, { type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }],
      }],
    });
    assert.equal(r.choices[0]!.message.content, expected);
    // 5 frames (2×2 tiles + global) × 4 image tokens + their markers: far more prompt tokens than the text alone
    assert.ok(r.usage!.prompt_tokens > 30, String(r.usage!.prompt_tokens));
  });

  it('OpenAI image_url streamed: the same text', async () => {
    const s = await openai.chat.completions.create({
      model: MODEL,
      temperature: 0,
      max_tokens: N,
      stream: true,
      messages: [{
        role: 'user',
        content: [{ type: 'text', text: PROMPT }, { type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }],
      }],
    });
    let text = '';
    for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
    assert.equal(text, expected);
  });

  it('Ollama images on /api/chat and /api/generate: the same text', async () => {
    const c = await h.ollama.chat({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT, images: [b64] }],
      options: { temperature: 0, num_predict: N },
    });
    assert.equal(c.message.content, expected);
    const g = await h.ollama.generate({ model: MODEL, prompt: PROMPT, images: [b64], options: { temperature: 0, num_predict: N } });
    assert.equal(g.response, expected);
  });

  it('Anthropic image blocks (base64 and url sources): the same text', async () => {
    const anthropic = new Anthropic({ baseURL: h.srv.url, apiKey: 'unused', maxRetries: 0 });
    const r = await anthropic.messages.create({
      model: MODEL,
      max_tokens: N,
      ...greedy,
      messages: [{
        role: 'user',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64 } }, { type: 'text', text: PROMPT }],
      }],
    });
    assert.equal(r.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), expected);
    const viaUrl = await anthropic.messages.create({
      model: MODEL,
      max_tokens: N,
      ...greedy,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: imageUrl } }, { type: 'text', text: PROMPT }] }],
    });
    assert.equal(viaUrl.content.map((b) => (b.type === 'text' ? b.text : '')).join(''), expected);
  });

  it('the pixels reach the model: another image gives another answer', async () => {
    const white = Buffer.from(execFileSync('convert', ['-size', '50x40', 'xc:white', '-depth', '8', 'png:-'])).toString('base64');
    const c = await h.ollama.chat({
      model: MODEL,
      messages: [{ role: 'user', content: PROMPT, images: [white] }],
      options: { temperature: 0, num_predict: N },
    });
    assert.notEqual(c.message.content, expected);
  });

  it('Responses input_image: a data URL and an uploaded file id give the same text', async () => {
    const viaUrl = await openai.responses.create({
      model: MODEL,
      temperature: 0,
      max_output_tokens: N,
      input: [{
        role: 'user',
        content: [{ type: 'input_image', image_url: `data:image/png;base64,${b64}`, detail: 'auto' }, { type: 'input_text', text: PROMPT }],
      }],
    });
    assert.equal(viaUrl.output_text, expected);
    const file = await openai.files.create({
      file: new File([Uint8Array.from(png)], 'picture.png', { type: 'image/png' }),
      purpose: 'vision',
    });
    const viaFile = await openai.responses.create({
      model: MODEL,
      temperature: 0,
      max_output_tokens: N,
      input: [{ role: 'user', content: [{ type: 'input_image', file_id: file.id, detail: 'auto' }, { type: 'input_text', text: PROMPT }] }],
    });
    assert.equal(viaFile.output_text, expected);
  });

  it('an http(s) image URL on an allowed host is fetched; a host outside the policy is 403 egress_denied', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL,
      temperature: 0,
      max_tokens: N,
      messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT }, { type: 'image_url', image_url: { url: imageUrl } }] }],
    });
    assert.equal(r.choices[0]!.message.content, expected);
    const denied = imageUrl.replace('localhost', '127.0.0.1');
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        max_tokens: 2,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: denied } }] }],
      }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError && /egress/.test(e.message) && /127\.0\.0\.1/.test(e.message),
    );
    // a redirect off the allowed host is refused too
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        max_tokens: 2,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: imageUrl.replace('/picture.png', '/redirect') } }] }],
      }),
      (e: unknown) => e instanceof OpenAI.PermissionDeniedError && /127\.0\.0\.1/.test(e.message),
    );
  });

  it('images to a model without vision: 400 in both dialects', async () => {
    await assert.rejects(
      openai.chat.completions.create({
        model: 'tiny-llama:test',
        max_tokens: 2,
        messages: [{
          role: 'user',
          content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }],
        }],
      }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /vision/.test(e.message),
    );
    const r = await h.post('/api/chat', {
      model: 'tiny-llama:test',
      stream: false,
      messages: [{ role: 'user', content: 'hi', images: [b64] }],
    });
    assert.equal(r.status, 400);
    assert.match((await r.json()).error, /vision/);
  });

  it('a pixel bomb (header declares 10^10 pixels) is refused with 413 before decoding; not an image: 415; not base64: 400', async () => {
    const bomb = Buffer.from(pngHeader(100_000, 100_000, 300_001)).toString('base64');
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        max_tokens: 2,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${bomb}` } }] }],
      }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 413 && /pixels/.test(e.message),
    );
    const r = await h.post('/api/chat', {
      model: MODEL,
      stream: false,
      messages: [{ role: 'user', content: 'hi', images: [Buffer.from('plain text, not an image').toString('base64')] }],
    });
    assert.equal(r.status, 415);
    assert.match((await r.json()).error, /not an image/);
    const bad = await h.post('/api/chat', {
      model: MODEL,
      stream: false,
      messages: [{ role: 'user', content: 'hi', images: ['%%%not base64%%%'] }],
    });
    assert.equal(bad.status, 400);
  });
});
