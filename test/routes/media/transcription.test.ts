/**
 * Transcription over HTTP with the tiny random-weight Whisper fixture (served by the hub stand-in, pulled
 * like any catalog model): the official `openai` client's audio.transcriptions / translations in every
 * response_format, parsed and checked (SRT/WebVTT cues well-formed and monotonic, verbose_json segments
 * inside the audio); long espeak-ng speech with sox silences is cut into ≤30 s windows whose boundaries lie
 * in the silences; the native task in its input forms; 415, 422, 400. No accuracy (WER) check: no real
 * Whisper weights can be had here (see docs/api/media.md).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI, { toFile } from 'openai';
import { listening } from '../../support/server.ts';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../../support/hub-stand-in.ts';
import { at, base64, bytes, SENTENCES, soxDuration, speech, type SpeechFixture, speechSilenceSpeech, video } from './make-media.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let openai: OpenAI;
let fx: SpeechFixture;
const MODEL = 'tiny-whisper:test';

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  fx = speechSilenceSpeech();
});
after(async () => {
  await srv?.close();
  await hub?.close();
});

const file = (path: string, name = 'speech.wav') => toFile(bytes(path), name);

/** Cue times of an SRT or WebVTT body, checked for shape; returns [start, end] pairs in seconds. */
function cues(body: string, sep: ',' | '.'): [number, number][] {
  const re = new RegExp(`^(\\d{2}):(\\d{2}):(\\d{2})\\${sep}(\\d{3}) --> (\\d{2}):(\\d{2}):(\\d{2})\\${sep}(\\d{3})$`);
  const out: [number, number][] = [];
  for (const line of body.split('\n')) {
    if (!line.includes('-->')) continue;
    const m = re.exec(line);
    assert.ok(m, `malformed cue line: ${JSON.stringify(line)}`);
    const t = (i: number) => Number(m[i]) * 3600 + Number(m[i + 1]) * 60 + Number(m[i + 2]) + Number(m[i + 3]) / 1000;
    out.push([t(1), t(5)]);
  }
  return out;
}

function assertMonotonic(times: [number, number][], duration: number) {
  let prev = 0;
  for (const [s, e] of times) {
    assert.ok(s >= prev - 1e-9, `cue starts ${s} before the previous ends ${prev}`);
    assert.ok(e >= s, `cue ends ${e} before it starts ${s}`);
    assert.ok(e <= duration + 0.01, `cue ends ${e} after the audio (${duration} s)`);
    prev = e;
  }
}

test('openai client: json, text, srt, vtt and verbose_json of the same audio agree', async () => {
  const json = await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, language: 'en' });
  assert.equal(typeof json.text, 'string');
  assert.ok(json.text.length > 0, 'the random model still writes tokens');

  const verbose = await openai.audio.transcriptions.create({
    file: await file(fx.path),
    model: MODEL,
    language: 'en',
    response_format: 'verbose_json',
    timestamp_granularities: ['segment'],
  });
  assert.equal(verbose.language, 'english');
  assert.ok(Math.abs(verbose.duration - fx.duration) < 0.05, `duration ${verbose.duration} vs sox ${fx.duration}`);
  assert.equal(verbose.text, json.text, 'greedy decoding is deterministic');
  assert.ok(verbose.segments && verbose.segments.length > 0);
  assertMonotonic(verbose.segments.map((s) => [s.start, s.end]), verbose.duration);
  verbose.segments.forEach((s, i) => {
    assert.equal(s.id, i);
    assert.ok(Array.isArray(s.tokens) && s.tokens.length > 0);
  });
  assert.equal(verbose.segments.map((s) => s.text).join('').trim(), verbose.text);

  const text = await openai.audio.transcriptions.create({
    file: await file(fx.path),
    model: MODEL,
    language: 'en',
    response_format: 'text',
  });
  assert.equal(String(text).trim(), json.text);

  const srt = String(
    await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, language: 'en', response_format: 'srt' }),
  );
  const srtCues = cues(srt, ',');
  assert.equal(srtCues.length, verbose.segments.length);
  assertMonotonic(srtCues, fx.duration);
  const blocks = srt.trim().split(/\n\n/);
  blocks.forEach((b, i) => assert.equal(b.split('\n')[0], String(i + 1), 'SRT cues are numbered from 1'));
  srtCues.forEach(([s, e], i) => {
    assert.ok(Math.abs(s - verbose.segments![i]!.start) < 0.0015);
    assert.ok(Math.abs(e - verbose.segments![i]!.end) < 0.0015);
  });

  const vtt = String(
    await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, language: 'en', response_format: 'vtt' }),
  );
  assert.ok(vtt.startsWith('WEBVTT\n\n'), 'WebVTT header');
  const vttCues = cues(vtt, '.');
  assert.deepEqual(vttCues, srtCues);
});

test('openai client: translations and a prompt; language detection when no language is given', async () => {
  const tr = await openai.audio.translations.create({ file: await file(fx.path), model: MODEL, response_format: 'verbose_json' });
  assert.equal((tr as unknown as { task: string }).task, 'translate');
  assert.ok(tr.text.length > 0);
  const res = await fetch(`${srv.url}/svc/v1/audio-transcription`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ file: base64(fx.path), model: MODEL, prompt: 'Railway station, fox.' }),
  });
  assert.equal(res.status, 200);
  const body = await res.json() as { language: string; text: string; task: string };
  assert.match(body.language, /^(en|zh|de|es|ru|ko|fr|ja|pt|it)$/, "one of the fixture's languages");
  assert.equal(body.task, 'transcribe');
});

/** Eight espeak-ng sentences with 2–3 s sox silences between: ~45 s, more than one Whisper window. */
function longSpeech(): SpeechFixture {
  const sentences = SENTENCES;
  const parts: string[] = [];
  const segments: { start: number; end: number }[] = [];
  let t = 0.5;
  sentences.forEach((s, i) => {
    const sp = speech(`long-${i}`, s);
    const gap = 2 + (i % 3) * 0.5;
    const padded = at(`long-${i}-pad.wav`);
    execFileSync('sox', [sp.path, padded, 'pad', i === 0 ? '0.5' : '0', String(gap)]);
    parts.push(padded);
    segments.push({ start: t, end: t + sp.seconds });
    t += sp.seconds + gap;
  });
  const path = at('long.wav');
  execFileSync('sox', [...parts, path]);
  return { path, segments, duration: soxDuration(path) };
}

test('long audio is cut into ≤30 s windows at silences, never inside speech', async () => {
  const long = longSpeech();
  assert.ok(long.duration > 40, `fixture lasts ${long.duration} s`);
  const res = await fetch(`${srv.url}/svc/v1/audio-transcription`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ file: base64(long.path), model: MODEL, language: 'en' }),
  });
  assert.equal(res.status, 200);
  const r = await res.json() as { chunks: { start: number; end: number }[]; segments: { start: number; end: number }[]; duration: number };
  assert.ok(r.chunks.length >= 2, `chunks ${JSON.stringify(r.chunks)}`);
  const inSpeech = (t: number) => long.segments.some((s) => t > s.start + 0.05 && t < s.end - 0.05);
  for (const c of r.chunks) {
    assert.ok(c.end - c.start <= 30.001, `window ${c.start}–${c.end} longer than 30 s`);
    assert.ok(!inSpeech(c.start), `window starts at ${c.start} inside speech`);
    assert.ok(!inSpeech(c.end), `window ends at ${c.end} inside speech`);
  }
  for (const s of long.segments) {
    assert.ok(
      r.chunks.some((c) => c.start <= s.start + 0.1 && c.end >= s.end - 0.1),
      `sentence ${s.start}–${s.end} not inside one window: ${JSON.stringify(r.chunks)}`,
    );
  }
  for (let i = 1; i < r.chunks.length; i++) assert.ok(r.chunks[i]!.start >= r.chunks[i - 1]!.end);
  assertMonotonic(r.segments.map((s) => [s.start, s.end]), r.duration);
});

test('native task: multipart and FileIdentifier forms, job contract', async () => {
  const form = new FormData();
  form.set('model', MODEL);
  form.set('language', 'English');
  form.set('file', new Blob([bytes(fx.path)]), 'speech.wav');
  const res = await fetch(`${srv.url}/svc/v1/audio-transcription`, { method: 'POST', body: form });
  assert.equal(res.status, 200);
  const a = await res.json() as { text: string; language: string; decoder: string };
  assert.equal(a.language, 'en');
  const up = new FormData();
  up.set('purpose', 'user_data');
  up.set('file', new Blob([bytes(fx.path)]), 'speech.wav');
  const f = await (await fetch(`${srv.url}/v1/files`, { method: 'POST', body: up })).json() as { id: string };
  const job = await fetch(`${srv.url}/svc/v1/audio-transcription`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify({ input_format: 'FileIdentifier', file_id: f.id, model: MODEL, language: 'en' }),
  });
  assert.equal(job.status, 202);
  const loc = job.headers.get('location')!;
  let rec: { status: string; result?: { text: string } };
  for (;;) {
    rec = await (await fetch(`${srv.url}${loc}`)).json() as typeof rec;
    if (rec.status !== 'processing') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(rec.status, 'completed', JSON.stringify(rec).slice(0, 300));
  assert.equal(rec.result?.text, a.text);
});

test('errors: 415 not media, 422 video without audio, 400 wrong model kind / unknown language', async () => {
  const notMedia = at('notes.txt');
  execFileSync('sh', ['-c', `printf 'just some text, not audio\\n%.0s' $(seq 50) > ${notMedia}`]);
  const e415 = await openai.audio.transcriptions.create({ file: await file(notMedia, 'notes.wav'), model: MODEL }).catch((e: unknown) => e);
  assert.ok(e415 instanceof OpenAI.APIError);
  assert.equal(e415.status, 415);
  assert.equal((e415.error as { code?: string }).code, 'unsupported_file_type');

  const silent = video('silent.mp4', 2);
  const e422 = await openai.audio.transcriptions.create({ file: await file(silent, 'silent.mp4'), model: MODEL }).catch((e: unknown) => e);
  assert.ok(e422 instanceof OpenAI.APIError);
  assert.equal(e422.status, 422);

  const wrongKind = await openai.audio.transcriptions.create({ file: await file(fx.path), model: 'tiny-llama:test' }).catch((e: unknown) =>
    e
  );
  assert.ok(wrongKind instanceof OpenAI.BadRequestError, String(wrongKind));
  assert.match(wrongKind.message, /does not support transcribe/);

  const lang = await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, language: 'xx' }).catch((e: unknown) =>
    e
  );
  assert.ok(lang instanceof OpenAI.BadRequestError);
  const notInModel = await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, language: 'nl' }).catch((
    e: unknown,
  ) => e);
  assert.ok(notInModel instanceof OpenAI.BadRequestError);

  const format = await openai.audio.transcriptions.create({ file: await file(fx.path), model: MODEL, response_format: 'yaml' as 'json' })
    .catch((e: unknown) => e);
  assert.ok(format instanceof OpenAI.BadRequestError);

  const caps = await (await fetch(`${srv.url}/svc/v1/audio-transcription/capabilities`)).json() as {
    response_formats: string[];
    timestamp_granularities: string[];
  };
  assert.deepEqual(caps.response_formats, ['json', 'text', 'srt', 'vtt', 'verbose_json']);
  assert.deepEqual(caps.timestamp_granularities, ['segment', 'word']);
});

test('word timestamps: verbose_json words from the cross-attentions, inside the audio, in order, spelling the text', async () => {
  const v = await openai.audio.transcriptions.create({
    file: await file(fx.path),
    model: MODEL,
    language: 'en',
    response_format: 'verbose_json',
    timestamp_granularities: ['word', 'segment'],
  });
  assert.ok(v.words && v.words.length > 0, 'words');
  assertMonotonic(v.words.map((w) => [w.start, w.end]), v.duration);
  const squash = (x: string) => x.replace(/\s+/g, '');
  assert.equal(squash(v.words.map((w) => w.word).join('')), squash(v.text), 'the words spell the text');
  assert.ok(v.segments && v.segments.length > 0, 'segments too');
  // Each word lies inside one of the VAD windows the audio was cut into (native answer, same audio).
  const res = await fetch(`${srv.url}/svc/v1/audio-transcription`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ file: base64(fx.path), model: MODEL, language: 'en', timestamp_granularities: ['word'] }),
  });
  assert.equal(res.status, 200);
  const n = await res.json() as { words: { start: number; end: number }[]; chunks: { start: number; end: number }[] };
  assert.deepEqual(n.words, v.words);
  for (const w of n.words) assert.ok(n.chunks.some((c) => w.start >= c.start - 1e-6 && w.end <= c.end + 1e-6), JSON.stringify(w));
  // Without asking, no words (the alignment runs only when asked).
  const plain = await openai.audio.transcriptions.create({
    file: await file(fx.path),
    model: MODEL,
    language: 'en',
    response_format: 'verbose_json',
  });
  assert.equal(plain.words, undefined);
});
