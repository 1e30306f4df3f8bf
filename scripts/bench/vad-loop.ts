/**
 * Does voice activity detection block the event loop? The loop's delay (perf_hooks histogram, 1 ms
 * resolution) while /svc/v1/voice-activity-detection runs Silero over a 10-minute WAV (sox-made speech
 * and silence, repeated), in-process, native ONNX Runtime. Prints one table row per run; medians of 3.
 *   node --import tsx scripts/bench/vad-loop.ts
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { inProcess } from '../../test/support/server.ts';
import { at, speechSilenceSpeech } from '../../test/routes/media/make-media.ts';
import { writeSection } from './write-benchmarks.mjs';
import { loadNote, median } from './helpers.ts';

const fx = speechSilenceSpeech();
const long = at('vad-long.wav');
execFileSync('sox', [...Array(120).fill(fx.path), '-r', '16000', '-c', '1', long]);
const wav = readFileSync(long);
const app = await inProcess();
const send = async () => {
  const form = new FormData();
  form.set('file', new Blob([wav]), 'long.wav');
  const r = await app.request('/svc/v1/voice-activity-detection/file', { method: 'POST', body: form });
  if (r.status !== 200) throw new Error(`${r.status} ${await r.text()}`);
  return r.json() as Promise<{ audio_duration: number; segments: unknown[] }>;
};
await send(); // warm: model loaded
const rows: number[][] = [];
for (let i = 0; i < 3; i++) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t = performance.now();
  const d = await send();
  const wall = performance.now() - t;
  h.disable();
  rows.push([wall, h.percentile(50) / 1e6, h.percentile(99) / 1e6, h.max / 1e6]);
  console.error(`run ${i + 1}: ${d.audio_duration.toFixed(0)} s of audio, ${d.segments.length} segments`);
}
const med = (k: number) => median(rows.map((r) => r[k]!)).toFixed(k ? 1 : 0);
const table = [
  '`node --import tsx scripts/bench/vad-loop.ts` — event-loop delay (ms) while voice activity detection runs in-process (Silero v5 on native ONNX Runtime, the audio decoded by ffmpeg), medians of 3 runs; ' +
  loadNote() + '.',
  '',
  '| work | wall ms | loop delay p50 | p99 | max |',
  '| --- | --- | --- | --- | --- |',
  `| voice-activity-detection, ${(wav.length / 32000 / 60).toFixed(0)} min WAV | ${med(0)} | ${med(1)} | ${med(2)} | ${med(3)} |`,
].join('\n');
console.log(table);
writeSection('Voice activity detection and the event loop', table);
await app.close();
process.exit(0);
