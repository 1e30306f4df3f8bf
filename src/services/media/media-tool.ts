/**
 * The two ways media is decoded: the system `ffmpeg`/`ffprobe` programs (fast, streamed, any size), or
 * ffmpeg's WASM build (@ffmpeg/core) in a worker thread with a deadline, so a machine without ffmpeg (and
 * the single binary) still handles audio and video. Both take the same ffmpeg arguments and answer the
 * same way; callers never know which one ran.
 */
import { dirname, extname } from 'node:path';
import { stat } from 'node:fs/promises';
import { findExecutable, runTool, streamTool } from '../../runtime/child-process.ts';
import { ffmpegWasm } from './ffmpeg-wasm.ts';

/** ffmpeg arguments for an input path and an output target (stdout for the system tool, a file for WASM). */
export type ArgsFor = (input: string, output: string) => string[];

export interface ExecResult {
  output: Uint8Array;
  log: string;
}

export interface MediaTool {
  kind: 'system' | 'wasm';
  /** ffprobe's JSON (`-show_format -show_streams`) of a file, or null when no demuxer recognises it. */
  probe(path: string, signal?: AbortSignal): Promise<unknown | null>;
  /** Runs ffmpeg over the file; the output is what it wrote to `output`. Throws MediaToolError on failure. */
  exec(path: string, args: ArgsFor, opts?: { signal?: AbortSignal; maxOutputBytes?: number }): Promise<ExecResult>;
  /** Like exec, but the output arrives in chunks as it is written (the WASM build yields it once, at the end). */
  stream(path: string, args: ArgsFor, signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /** The text ffmpeg prints for a listing flag (`-demuxers`, `-encoders`, `-decoders`). */
  listing(flag: string): Promise<string>;
}

export class MediaToolError extends Error {
  constructor(message: string, readonly log: string) {
    super(message);
    this.name = 'MediaToolError';
  }
}

const lastLines = (log: string, n = 3) => log.trim().split('\n').slice(-n).join(' | ');

export function systemTool(ffmpeg: string, ffprobe: string): MediaTool {
  return {
    kind: 'system',
    async probe(path, signal) {
      const r = await runTool(ffprobe, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path], {
        signal,
        timeoutMs: 60_000,
      });
      if (r.code !== 0) return null;
      return JSON.parse(new TextDecoder().decode(r.stdout)) as unknown;
    },
    async exec(path, args, opts = {}) {
      const r = await runTool(ffmpeg, ['-nostdin', '-hide_banner', ...args(path, 'pipe:1')], {
        signal: opts.signal,
        maxStdoutBytes: opts.maxOutputBytes,
        timeoutMs: 10 * 60_000,
      });
      if (r.code !== 0) throw new MediaToolError(`ffmpeg failed: ${lastLines(r.stderr)}`, r.stderr);
      return { output: r.stdout, log: r.stderr };
    },
    async *stream(path, args, signal) {
      const p = streamTool(ffmpeg, ['-nostdin', '-hide_banner', ...args(path, 'pipe:1')], { signal });
      try {
        for await (const chunk of p.stdout) yield chunk;
        const end = await p.done;
        if (end.code !== 0) throw new MediaToolError(`ffmpeg failed: ${lastLines(end.stderr)}`, end.stderr);
      } finally {
        p.kill(); // the consumer stopped early (or failed): stop decoding
      }
    },
    async listing(flag) {
      const r = await runTool(ffmpeg, ['-hide_banner', flag], { timeoutMs: 30_000 });
      return new TextDecoder().decode(r.stdout);
    },
  };
}

/** Deadline of one WASM run: a minute plus two seconds per input megabyte (some codecs hang the build). */
const wasmDeadline = (bytes: number) => 60_000 + Math.ceil(bytes / 1e6) * 2_000;

export function wasmTool(): MediaTool {
  const inName = (path: string) => `/input${extname(path).toLowerCase().replace(/[^.a-z0-9]/g, '').slice(0, 8)}`;
  return {
    kind: 'wasm',
    async probe(path, signal) {
      const size = (await stat(path)).size;
      const r = await ffmpegWasm({ inputPath: path, inputName: inName(path), probe: true, timeoutMs: wasmDeadline(size), signal });
      if (!r.probe) return null;
      const json = JSON.parse(r.probe) as { streams?: unknown[]; format?: unknown };
      return json.format ? json : null;
    },
    async exec(path, args, opts = {}) {
      const size = (await stat(path)).size;
      const name = inName(path);
      const r = await ffmpegWasm({
        inputPath: path,
        inputName: name,
        args: args(name, '/output'),
        outputName: '/output',
        timeoutMs: wasmDeadline(size),
        signal: opts.signal,
      });
      if (r.code !== 0 || !r.output) throw new MediaToolError(`ffmpeg (WASM) failed: ${lastLines(r.log)}`, r.log);
      if (opts.maxOutputBytes !== undefined && r.output.byteLength > opts.maxOutputBytes) {
        throw new MediaToolError('ffmpeg (WASM) output too large', r.log);
      }
      return { output: r.output, log: r.log };
    },
    async *stream(path, args, signal) {
      yield (await this.exec(path, args, { signal })).output;
    },
    async listing(flag) {
      const r = await ffmpegWasm({ args: ['-hide_banner', flag], timeoutMs: 60_000 });
      return r.log;
    },
  };
}

/**
 * The tool this machine has: the system ffmpeg when `ffmpegPath` finds one (with ffprobe beside it or
 * on PATH), else the WASM build when allowed, else null (media routes then answer 501).
 */
export async function findMediaTool(opts: { ffmpegPath: string; wasm: boolean }): Promise<MediaTool | null> {
  const ffmpeg = await findExecutable(opts.ffmpegPath);
  if (ffmpeg) {
    const probeName = opts.ffmpegPath.includes('/') ? `${dirname(ffmpeg)}/ffprobe` : 'ffprobe';
    const ffprobe = (await findExecutable(probeName)) ?? (await findExecutable('ffprobe'));
    if (ffprobe) return systemTool(ffmpeg, ffprobe);
  }
  return opts.wasm && (await ffmpegWasm.available()) ? wasmTool() : null;
}
