/**
 * Media benchmark: voice activity detection real-time factor (decode + Silero VAD), and the latency of one
 * video frame against the `ffmpeg` CLI extracting the same frame, in the same run (sides interleaved).
 * Run: node --import tsx scripts/bench/media.ts   (writes the "Media" section of BENCHMARKS.md)
 * Needs ffmpeg, espeak-ng and sox on PATH.
 */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { MediaService } from '../../src/services/media/media-service.ts';
import { at, soxDuration, speech, video } from '../../test/routes/media/make-media.ts';
import { writeSection } from './write-benchmarks.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const med = (t: number[]) => [...t].sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;

/** Median times of several sides, measured in turns (a, b, c, a, b, c, ...) so load drifts hit all alike. */
async function interleaved(sides: Record<string, () => Promise<unknown> | unknown>, runs = RUNS): Promise<Record<string, number>> {
  const t: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (const fn of Object.values(sides)) await fn(); // warm-up: engines loaded, files cached
  for (let i = 0; i < runs; i++) {
    for (const [k, fn] of Object.entries(sides)) {
      const s = performance.now();
      await fn();
      t[k]!.push(performance.now() - s);
    }
  }
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, med(v)]));
}

// ~60 s of speech with pauses: espeak-ng sentences joined by sox with 0.7 s silences.
const lines = [
  'The quick brown fox jumps over the lazy dog.',
  'Many people were waiting at the old railway station.',
  'A voice activity detector marks where somebody is speaking.',
  'Silence and background noise should not count as speech.',
];
const parts = lines.map((l, i) => speech(`bench-${i}`, l).path);
const once = at('bench-once.wav');
execFileSync('sox', [...parts.flatMap((p) => [p]), once]);
const long = at('bench-60s.wav');
const reps = Math.ceil(60 / soxDuration(once));
execFileSync('sox', [...Array(reps).fill(once), long, 'pad', '0', '0.7']);
const audioSeconds = soxDuration(long);

const system = new MediaService({ ffmpegPath: 'ffmpeg', wasm: false });
const wasm = new MediaService({ ffmpegPath: '', wasm: true });

const vad = await interleaved({
  system: () => system.detectSpeech(long),
  wasm: () => wasm.detectSpeech(long),
});
// decoding alone (PCM out of ffmpeg), to show what VAD itself costs
const decodeOnly = await interleaved({
  system: async () => {
    for await (const _ of system.decodeAudio((await system.tool())!, long)) { /* drain */ }
  },
});

const clip = video('bench-clip.mp4', 20);
const ref = at('bench-ref.png');
const frames = await interleaved({
  'ffmpeg CLI': () => execFileSync('ffmpeg', ['-nostdin', '-v', 'error', '-y', '-ss', '12.3', '-i', clip, '-frames:v', '1', ref]),
  'svc (system ffmpeg)': () => system.frame(clip, { at: 12.3, format: 'png' }),
  'svc (WASM ffmpeg)': () => wasm.frame(clip, { at: 12.3, format: 'png' }),
  'svc auto mode (system)': () => system.frame(clip, { format: 'png' }),
});

const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
const cli = frames['ffmpeg CLI']!;
const body = `
Machine: ${cpus().length} × ${cpu}, Node ${process.version}; median of ${RUNS} runs, sides interleaved, shared machine (other engineers' jobs were running). Run: \`node --import tsx scripts/bench/media.ts\`.

| case | time (median) | rate / ratio | note |
| --- | --- | --- | --- |
| VAD, ${audioSeconds.toFixed(1)} s of espeak-ng speech (WAV), system ffmpeg decode + Silero v5 | ${ms(vad.system!)} | **RTF ${
  (vad.system! / 1000 / audioSeconds).toFixed(4)
}** (${(audioSeconds / (vad.system! / 1000)).toFixed(0)}× real time) | decode alone ${ms(decodeOnly.system!)} |
| VAD, same audio, WASM ffmpeg decode + Silero v5 | ${ms(vad.wasm!)} | **RTF ${
  (vad.wasm! / 1000 / audioSeconds).toFixed(4)
}** | worker + WASM load included |
| frame at 12.3 s of a 20 s 320×240 H.264 clip, \`ffmpeg -ss 12.3 -i clip -frames:v 1 out.png\` (peer) | ${ms(cli)} | 1.00× | one process |
| same frame through MediaService (system ffmpeg: ffprobe + ffmpeg) | ${ms(frames['svc (system ffmpeg)']!)} | ${
  (frames['svc (system ffmpeg)']! / cli).toFixed(2)
}× the CLI | |
| same frame through MediaService (WASM ffmpeg) | ${ms(frames['svc (WASM ffmpeg)']!)} | ${
  (frames['svc (WASM ffmpeg)']! / cli).toFixed(2)
}× the CLI | two fresh workers (probe, frame), each loading the 32 MB core |
| auto frame (five candidates, then the frame), system ffmpeg | ${ms(frames['svc auto mode (system)']!)} | ${
  (frames['svc auto mode (system)']! / cli).toFixed(2)
}× the CLI | |

Transcription real-time factor against whisper.cpp: see the section written by \`scripts/bench/transcription.ts\`.
`;
console.log(body);
writeSection('Media (VAD real-time factor, video frame latency)', body);
process.exit(0);
