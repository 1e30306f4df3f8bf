/** Image fixtures made by ImageMagick and exiftool, and the judges: identify, compare, exiftool. */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmp, tool, writeTmp } from '../../services/pdf/helpers.ts';

export { tmp, tool, writeTmp };

/** An image made by ImageMagick's `convert` (args then the output file of the given extension). */
export function magick(args: string[], ext: string): Uint8Array {
  const out = tmp(ext);
  execFileSync('convert', [...args, out]);
  return readFileSync(out);
}

/** `identify -format` on the bytes (every frame). */
export function identify(bytes: Uint8Array, format: string, ext = 'img'): string {
  const r = tool('identify', ['-format', format, writeTmp(bytes, ext)]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

export function identifyVerbose(bytes: Uint8Array, ext = 'img'): string {
  return tool('identify', ['-verbose', writeTmp(bytes, ext)]).stdout;
}

/** `compare -metric` between two images: AE (differing pixels, with a fuzz) or RMSE (normalised 0..1). */
export function compareMetric(a: Uint8Array, b: Uint8Array, metric: 'AE' | 'RMSE', fuzz = '0%', extra: string[] = []): number {
  const r = spawnSync('compare', ['-metric', metric, '-fuzz', fuzz, ...extra, writeTmp(a, 'img'), writeTmp(b, 'img'), 'null:']);
  if (r.error) throw new Error(`compare (imagemagick) is needed by this test: ${r.error.message}`);
  const text = r.stderr.toString();
  const m = metric === 'RMSE' ? /\(([\d.e+-]+)\)/.exec(text) : /^([\d.e+-]+)/.exec(text.trim());
  if (!m) throw new Error(`compare said: ${text}`);
  return Number(m[1]);
}

/** exiftool -j on the bytes: one object of tags (group-prefixed with -G1 when asked). */
export function exiftool(bytes: Uint8Array, args: string[] = []): Record<string, unknown> {
  const r = tool('exiftool', ['-j', ...args, writeTmp(bytes, 'img')]);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout)[0];
}

/** Writes tags with exiftool and returns the new bytes. */
export function exiftoolWrite(bytes: Uint8Array, args: string[], ext: string): Uint8Array {
  const p = writeTmp(bytes, ext);
  const r = tool('exiftool', ['-overwrite_original', ...args, p]);
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(p);
}

/** Raw RGB(A) pixels of an image as ImageMagick decodes them. */
export function pixels(bytes: Uint8Array, map = 'RGB'): { data: Uint8Array; width: number; height: number } {
  const [w, h] = identify(bytes, '%w %h\n').split('\n')[0]!.split(' ').map(Number);
  const out = execFileSync('convert', [writeTmp(bytes, 'img') + '[0]', '-depth', '8', `${map.toLowerCase()}:-`], { maxBuffer: 1 << 30 });
  return { data: new Uint8Array(out), width: w!, height: h! };
}

export async function imageOf(r: Response, type: string): Promise<Uint8Array> {
  const ct = r.headers.get('content-type');
  if (r.status !== 200 || ct !== type) assert.fail(`expected 200 ${type}, got ${r.status} ${ct}: ${await r.text()}`);
  return new Uint8Array(await r.arrayBuffer());
}
