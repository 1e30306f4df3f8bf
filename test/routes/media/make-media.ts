/**
 * Media fixtures made by the programs that make such files in the wild: espeak-ng (speech), sox
 * (silence, joins), ffmpeg (containers, video with and without sound). Each helper returns a path in
 * a temporary directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const dir = mkdtempSync(join(tmpdir(), 'svc-media-'));
export const at = (name: string) => join(dir, name);
const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const ffmpeg = (...args: string[]) => run('ffmpeg', ['-nostdin', '-v', 'error', '-y', ...args]);

/** Eight everyday English sentences (about 3 s each as espeak-ng speaks them). */
export const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Many people were waiting at the old railway station.',
  'It rained all afternoon, so the market closed early.',
  'Please send the report before the meeting on Friday.',
  'The children built a small boat from wood and rope.',
  'A cold wind blew across the empty harbour.',
  'She opened the window and listened to the birds.',
  "Our train leaves at seven o'clock tomorrow morning.",
];

/** Seconds of a sound file, as sox reads it. */
export const soxDuration = (path: string) => Number(run('soxi', ['-D', path]).trim());

/** espeak-ng speech at 16 kHz mono, its leading and trailing silence trimmed off by sox. */
export function speech(name: string, text: string): { path: string; seconds: number } {
  const raw = at(`${name}-raw.wav`), path = at(`${name}.wav`);
  run('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', raw, text]);
  // trim silence at both ends (the second `silence` runs on the reversed signal)
  run('sox', [
    raw,
    '-r',
    '16000',
    '-c',
    '1',
    '-b',
    '16',
    path,
    'silence',
    '1',
    '0.02',
    '0.5%',
    'reverse',
    'silence',
    '1',
    '0.02',
    '0.5%',
    'reverse',
  ]);
  return { path, seconds: soxDuration(path) };
}

export interface SpeechFixture {
  path: string;
  segments: { start: number; end: number }[];
  duration: number;
}

/** `lead` s of silence, speech A, `gap` s of silence, speech B, `tail` s of silence (a WAV). */
export function speechSilenceSpeech(lead = 1.0, gap = 1.5, tail = 1.0): SpeechFixture {
  const a = speech('a', 'The quick brown fox jumps over the lazy dog.');
  const b = speech('b', 'Many people were waiting at the old railway station.');
  const padA = at('a-pad.wav'), padB = at('b-pad.wav'), path = at('speech-silence-speech.wav');
  run('sox', [a.path, padA, 'pad', String(lead), String(gap)]);
  run('sox', [b.path, padB, 'pad', '0', String(tail)]);
  run('sox', [padA, padB, path]);
  const bStart = lead + a.seconds + gap;
  return {
    path,
    duration: soxDuration(path),
    segments: [{ start: lead, end: lead + a.seconds }, { start: bStart, end: bStart + b.seconds }],
  };
}

/** The same audio in another container (by extension: .mp3, .ogg, .m4a, ...). */
export function transcode(src: string, name: string, ...extra: string[]): string {
  const out = at(name);
  ffmpeg('-i', src, ...extra, out);
  return out;
}

/** A video (testsrc pattern, 320×240, 25 fps, H.264) of `seconds`, with the given WAV as its sound or silent. */
export function video(name: string, seconds: number, audio?: string): string {
  const out = at(name);
  const v = ['-f', 'lavfi', '-i', `testsrc=duration=${seconds}:size=320x240:rate=25`];
  if (audio) ffmpeg(...v, '-i', audio, '-t', String(seconds), '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-af', 'apad', '-c:a', 'aac', out);
  else ffmpeg(...v, '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-an', out);
  return out;
}

/** A video that is black for `black` s, then the testsrc pattern for `seconds - black` s. */
export function blackThenPattern(name: string, seconds: number, black: number): string {
  const out = at(name);
  ffmpeg(
    '-f',
    'lavfi',
    '-i',
    `color=c=black:size=320x240:rate=25:duration=${black}`,
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=320x240:rate=25:duration=${seconds - black}`,
    '-filter_complex',
    '[0:v][1:v]concat=n=2:v=1:a=0[v]',
    '-map',
    '[v]',
    '-c:v',
    'libx264',
    '-pix_fmt',
    'yuv420p',
    out,
  );
  return out;
}

/** RGB24 pixels of an image (or a video's frame) as ffmpeg decodes them. */
export function rgbPixels(image: string | Uint8Array): { data: Uint8Array; width: number; height: number } {
  let path = image as string;
  if (typeof image !== 'string') {
    path = at(`img-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path, image);
  }
  const [width, height] = run('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'stream=width,height',
    '-of',
    'csv=p=0',
    path,
  ]).trim().split(',').map(Number) as [number, number];
  const data = new Uint8Array(
    execFileSync('ffmpeg', ['-nostdin', '-v', 'error', '-i', path, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'], {
      maxBuffer: 1 << 28,
    }),
  );
  return { data, width, height };
}

/** The frame ffmpeg itself extracts at `t` (accurate input seek), as a PNG file path. */
export function ffmpegFrame(video: string, t: number): string {
  const out = at(`ref-${t}.png`);
  ffmpeg('-ss', String(t), '-i', video, '-frames:v', '1', out);
  return out;
}

export const meanAbsDiff = (a: Uint8Array, b: Uint8Array) => {
  if (a.length !== b.length) return Infinity;
  let s = 0;
  for (let i = 0; i < a.length; i++) s += Math.abs(a[i]! - b[i]!);
  return s / a.length;
};

export const bytes = (path: string) => new Uint8Array(readFileSync(path));
export const base64 = (path: string) => readFileSync(path).toString('base64');
