/**
 * Voice activity detection over HTTP: speech made by espeak-ng between sox silences, found within
 * ±100 ms of where the fixture put it, in every input form and container; the WASM decoder gives the
 * same answer; 415/422/400/413/501 and the job contract.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type InProcess, inProcess, json } from '../../support/server.ts';
import { base64, bytes, type SpeechFixture, speechSilenceSpeech, transcode, video } from './make-media.ts';

let app: InProcess;
let fx: SpeechFixture;
before(async () => {
  app = await inProcess();
  fx = speechSilenceSpeech();
});
after(async () => {
  await app.close();
});

// Tight silence/padding settings so the answer is the speech itself; a 300 ms pause splits, word gaps don't.
const VAD = { min_silence_duration_ms: 300, speech_pad_ms: 0 };
const TOL = 0.1;

interface Detection {
  segments: { start: number; end: number }[];
  speech_duration: number;
  audio_duration: number;
  decoder: string;
  model: string;
}

function assertBoundaries(d: Detection, want = fx.segments, tol = TOL) {
  assert.equal(d.segments.length, want.length, `segments ${JSON.stringify(d.segments)} vs ${JSON.stringify(want)}`);
  d.segments.forEach((s, i) => {
    assert.ok(Math.abs(s.start - want[i]!.start) <= tol, `segment ${i} start ${s.start} vs ${want[i]!.start}`);
    assert.ok(Math.abs(s.end - want[i]!.end) <= tol, `segment ${i} end ${s.end} vs ${want[i]!.end}`);
  });
  const total = d.segments.reduce((t, s) => t + s.end - s.start, 0);
  assert.ok(Math.abs(d.speech_duration - total) < 0.002);
}

const multipart = (path: string, name: string, fields: Record<string, string> = {}) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  form.set('file', new Blob([bytes(path)]), name);
  return { method: 'POST', body: form };
};

test('speech, silence, speech: both ranges within ±100 ms (base64 WAV)', async () => {
  const r = await app.request(
    '/svc/v1/voice-activity-detection',
    json({ input_format: 'Base64EncodedFile', file: base64(fx.path), vad: VAD }),
  );
  assert.equal(r.status, 200);
  const d = (await r.json()) as Detection;
  assertBoundaries(d);
  assert.ok(Math.abs(d.audio_duration - fx.duration) < 0.04, `audio_duration ${d.audio_duration} vs ${fx.duration}`);
  assert.equal(d.model, 'silero-vad-v5');
  assert.equal(d.decoder, 'system');
});

test('defaults (100 ms silence, 30 ms pad) still bracket the speech; the ranges never cover the long silences', async () => {
  const r = await app.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path) }));
  const d = (await r.json()) as Detection;
  assert.ok(d.segments.length >= 2);
  assert.ok(Math.abs(d.segments[0]!.start - fx.segments[0]!.start) <= TOL + 0.03);
  assert.ok(Math.abs(d.segments.at(-1)!.end - fx.segments[1]!.end) <= TOL + 0.03);
  const gap = { start: fx.segments[0]!.end + 0.15, end: fx.segments[1]!.start - 0.15 };
  for (const s of d.segments) assert.ok(s.end <= gap.start || s.start >= gap.end, `segment ${JSON.stringify(s)} overlaps the silence`);
});

test('multipart /file with MP3 and Ogg/Opus, a video soundtrack (MP4), and a FileIdentifier', async () => {
  const mp3 = transcode(fx.path, 'speech.mp3');
  const opus = transcode(fx.path, 'speech.ogg', '-c:a', 'libopus');
  for (const [path, name] of [[mp3, 'speech.mp3'], [opus, 'speech.ogg']] as const) {
    const r = await app.request('/svc/v1/voice-activity-detection/file', multipart(path, name));
    assert.equal(r.status, 200, name);
    const d = (await r.json()) as Detection;
    // the /file form takes no tuning: defaults; the outer boundaries still hold
    assert.ok(Math.abs(d.segments[0]!.start - fx.segments[0]!.start) <= TOL + 0.03, `${name} start ${d.segments[0]!.start}`);
    assert.ok(Math.abs(d.segments.at(-1)!.end - fx.segments[1]!.end) <= TOL + 0.03, `${name} end ${d.segments.at(-1)!.end}`);
  }
  const mp4 = video('talking.mp4', Math.ceil(fx.duration), fx.path);
  const up = await app.request('/svc/v1/files/upload', multipart(mp4, 'talking.mp4'));
  assert.equal(up.status, 200);
  const { fileId: id } = (await up.json()) as { fileId: string };
  const r = await app.request('/svc/v1/voice-activity-detection', json({ input_format: 'FileIdentifier', file_id: id, vad: VAD }));
  assert.equal(r.status, 200);
  assertBoundaries((await r.json()) as Detection);
});

test('the WASM decoder (no system ffmpeg) gives the same ranges as the system ffmpeg', async () => {
  const wasm = await inProcess({ ffmpegPath: '' });
  try {
    const body = json({ file: base64(fx.path), vad: VAD });
    const [a, b] = await Promise.all([
      app.request('/svc/v1/voice-activity-detection', body),
      wasm.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path), vad: VAD })),
    ]);
    const da = (await a.json()) as Detection, db = (await b.json()) as Detection;
    assert.equal(db.decoder, 'wasm');
    assert.deepEqual(db.segments, da.segments);
    assert.equal(db.audio_duration, da.audio_duration);
  } finally {
    await wasm.close();
  }
});

test('422 for a video without an audio track; 415 for bytes that are not media; 400 for a bad vad object', async () => {
  const silent = video('silent.mp4', 2);
  let r = await app.request('/svc/v1/voice-activity-detection/file', multipart(silent, 'silent.mp4'));
  assert.equal(r.status, 422);
  assert.equal(((await r.json()) as { error: string }).error, 'no_audio_track');

  for (
    const data of [
      new TextEncoder().encode('just some words, no sound at all\n'),
      new Uint8Array(4096).map((_, i) => (i * 7919) % 256),
    ]
  ) {
    r = await app.request('/svc/v1/voice-activity-detection', json({ file: Buffer.from(data).toString('base64') }));
    assert.equal(r.status, 415);
    assert.equal(((await r.json()) as { error: string }).error, 'unsupported_file_type');
  }

  for (const vad of [{ threshold: 2 }, { min_silence_duration_ms: -1 }, { unknown_knob: 1 }]) {
    r = await app.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path), vad }));
    assert.equal(r.status, 400, JSON.stringify(vad));
  }
  r = await app.request('/svc/v1/voice-activity-detection/file', json({ file: base64(fx.path) }));
  assert.equal(r.status, 400, 'the /file route takes multipart only');
});

test('413 when the base64 body exceeds the upload limit (and on the multipart form); nothing is kept', async () => {
  const small = await inProcess({ maxUploadBytes: 64 * 1024 });
  try {
    const wav = bytes(fx.path);
    assert.ok(wav.byteLength > 64 * 1024);
    let r = await small.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path) }));
    assert.equal(r.status, 413);
    r = await small.request('/svc/v1/voice-activity-detection/file', multipart(fx.path, 'speech.wav'));
    assert.equal(r.status, 413);
    const list = await small.request('/v1/files');
    assert.deepEqual(((await list.json()) as { data: unknown[] }).data, []);
  } finally {
    await small.close();
  }
});

test('Prefer: respond-async gives 202 and a job whose result is the detection', async () => {
  const r = await app.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path), vad: VAD }, { prefer: 'respond-async' }));
  assert.equal(r.status, 202);
  const { job_id } = (await r.json()) as { job_id: string };
  let job: { status: string; result?: Detection } = { status: 'processing' };
  for (let i = 0; i < 200 && job.status === 'processing'; i++) {
    await new Promise((res) => setTimeout(res, 100));
    job = (await (await app.request(`/svc/v1/jobs/${job_id}`)).json()) as typeof job;
  }
  assert.equal(job.status, 'completed');
  assertBoundaries(job.result!);
});

test('501 for every media route when neither a system ffmpeg nor the WASM build may run', async () => {
  const none = await inProcess({ ffmpegPath: '', ffmpegWasm: false });
  try {
    const r = await none.request('/svc/v1/voice-activity-detection', json({ file: base64(fx.path) }));
    assert.equal(r.status, 501);
    const caps = (await (await none.request('/svc/v1/video-frames/capabilities')).json()) as { media_tool_available: boolean };
    assert.equal(caps.media_tool_available, false);
  } finally {
    await none.close();
  }
});
