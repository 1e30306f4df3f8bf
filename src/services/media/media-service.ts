/**
 * Audio and video work over files on disk: what a file holds, speech ranges (Silero VAD), single frames,
 * and what this machine can decode. Decoding goes through the system ffmpeg or its WASM build
 * (media-tool.ts); the service never knows which. Errors are ServiceErrors with the reasons of
 * docs/api/media.md.
 */
import { capabilityUnavailable, invalidArgument, ServiceError, unsupportedFileType } from '../errors.ts';
import { findMediaTool, type MediaTool, MediaToolError } from './media-tool.ts';
import { type MediaInfo, mediaInfo } from './probe.ts';
import { speechProbabilities, VAD_MODEL, VAD_SAMPLE_RATE, VAD_WINDOW } from './silero-vad.ts';
import { speechRanges, VAD_DEFAULTS, type VadOptions } from './speech-ranges.ts';
import { measureCapabilities, type MediaCapabilities } from './capabilities.ts';

export interface SpeechDetection {
  segments: { start: number; end: number }[];
  speech_duration: number;
  audio_duration: number;
  sample_rate: number;
  model: string;
  decoder: 'system' | 'wasm';
}

export type FrameFormat = 'png' | 'jpeg' | 'webp';
export interface FrameOptions {
  at?: number;
  format: FrameFormat;
  width?: number;
  height?: number;
  quality?: number;
}
export interface Frame {
  bytes: Uint8Array;
  contentType: string;
  info: MediaInfo & { video: NonNullable<MediaInfo['video']> };
  /** Time of the returned frame, seconds from the start of the clip. */
  timestamp: number;
  mode: 'exact' | 'auto';
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
const FRAME_TYPES: Record<FrameFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
/** Most bytes one encoded frame may take (a 16k × 16k PNG stays under it). */
const MAX_FRAME_BYTES = 512 * 1024 * 1024;

export class MediaService {
  private toolP: Promise<MediaTool | null> | undefined;
  private capsP: Promise<MediaCapabilities> | undefined;

  constructor(private readonly opts: { ffmpegPath: string; wasm: boolean }) {}

  /** The decoding tool of this machine (found once). */
  tool(): Promise<MediaTool | null> {
    return (this.toolP ??= findMediaTool({ ffmpegPath: this.opts.ffmpegPath, wasm: this.opts.wasm }));
  }

  private async requireTool(what: string): Promise<MediaTool> {
    const t = await this.tool();
    if (!t) {
      throw capabilityUnavailable(
        `${what} needs ffmpeg: install it (Debian: apt-get install ffmpeg) or allow its WASM build (setting ffmpegWasm)`,
      );
    }
    return t;
  }

  /** Decoders, demuxers and encoders this machine has, measured on first call and kept. */
  capabilities(): Promise<MediaCapabilities> {
    return (this.capsP ??= this.tool().then((t) => measureCapabilities(t)));
  }

  /** Media info of a file; 415 when it is no audio or video. */
  async info(path: string, signal?: AbortSignal): Promise<MediaInfo> {
    const tool = await this.requireTool('decoding audio and video');
    const info = mediaInfo(await tool.probe(path, signal));
    if (!info) throw unsupportedFileType('the file is not audio or video that ffmpeg can read');
    return info;
  }

  /** 16 kHz mono float PCM of the file's first audio stream, in chunks as ffmpeg writes it. */
  async *decodeAudio(tool: MediaTool, path: string, signal?: AbortSignal): AsyncGenerator<Float32Array> {
    let rest = new Uint8Array(0);
    const chunks = tool.stream(
      path,
      (
        i,
        o,
      ) => ['-v', 'error', '-i', i, '-map', '0:a:0', '-vn', '-sn', '-dn', '-ac', '1', '-ar', String(VAD_SAMPLE_RATE), '-f', 'f32le', o],
      signal,
    );
    try {
      for await (const chunk of chunks) {
        let bytes = chunk;
        if (rest.byteLength) {
          bytes = new Uint8Array(rest.byteLength + chunk.byteLength);
          bytes.set(rest);
          bytes.set(chunk, rest.byteLength);
        }
        const whole = bytes.byteLength - (bytes.byteLength % 4);
        // Copy into an aligned buffer of its own: a chunk may start at any byte offset, and may be a view into
        // a pool the runtime reuses for the next read (Bun's pipe chunks are; Node's Buffer.slice is a view too).
        const pcm = new Float32Array(whole / 4);
        new Uint8Array(pcm.buffer).set(bytes.subarray(0, whole));
        yield pcm;
        rest = new Uint8Array(bytes.subarray(whole));
      }
    } catch (e) {
      if (e instanceof MediaToolError) throw new ServiceError(422, 'undecodable_audio', `the audio stream cannot be decoded: ${e.message}`);
      throw e;
    }
  }

  /** Speech ranges of the file's audio (a video's soundtrack too); 422 for a file without audio. */
  async detectSpeech(path: string, options: Partial<VadOptions> = {}, signal?: AbortSignal): Promise<SpeechDetection> {
    const tool = await this.requireTool('voice activity detection');
    const info = await this.info(path, signal);
    if (!info.audio) throw new ServiceError(422, 'no_audio_track', 'the file has no audio track (a video without sound?)');
    const o = { ...VAD_DEFAULTS, ...options };
    const { probs, samples } = await speechProbabilities(this.decodeAudio(tool, path, signal), signal);
    const ranges = speechRanges(probs, samples, VAD_WINDOW, VAD_SAMPLE_RATE, o);
    const segments = ranges.map((r) => ({ start: round3(r.start / VAD_SAMPLE_RATE), end: round3(r.end / VAD_SAMPLE_RATE) }));
    const speech = ranges.reduce((s, r) => s + (r.end - r.start), 0) / VAD_SAMPLE_RATE;
    return {
      segments,
      speech_duration: round3(speech),
      audio_duration: round3(samples / VAD_SAMPLE_RATE),
      sample_rate: VAD_SAMPLE_RATE,
      model: VAD_MODEL,
      decoder: tool.kind,
    };
  }

  /**
   * One frame as an image: the first frame at or after `at` (mode exact), or, without `at`, a
   * representative one (mode auto: of five candidates spread over the clip, the least flat one that is
   * not black). 422 without a decodable video stream; 400 when `at` is past the end.
   */
  async frame(path: string, o: FrameOptions, signal?: AbortSignal): Promise<Frame> {
    const tool = await this.requireTool('video frames');
    const info = await this.info(path, signal);
    const v = info.video;
    if (!v) throw new ServiceError(422, 'no_video_stream', 'the file has no decodable video stream');
    const duration = info.duration ?? v.duration;
    if (o.at !== undefined && duration !== null && o.at >= duration) {
      throw invalidArgument(`at=${o.at} is past the end of the clip (${round3(duration)} s)`, [{
        field: 'at',
        message: `must be below ${round3(duration)}`,
      }]);
    }
    const mode = o.at === undefined ? 'auto' : 'exact';
    const at = o.at ?? (await this.representativeTime(tool, path, duration ?? 0, signal));
    const filters = ['showinfo'];
    if (o.width || o.height) filters.push(`scale=${o.width ?? -2}:${o.height ?? -2}:flags=lanczos`);
    const codec = o.format === 'png'
      ? ['-c:v', 'png']
      : o.format === 'jpeg'
      ? ['-c:v', 'mjpeg', '-q:v', String(jpegQ(o.quality ?? 85))]
      : ['-c:v', 'libwebp', '-quality', String(o.quality ?? 85)];
    let r;
    try {
      r = await tool.exec(path, (i, out) => [
        '-loglevel',
        'info',
        '-copyts',
        '-ss',
        String(info.startTime + at),
        '-i',
        i,
        '-map',
        '0:v:0',
        '-frames:v',
        '1',
        '-an',
        '-sn',
        '-dn',
        '-vf',
        filters.join(','),
        ...codec,
        '-f',
        'image2pipe',
        out,
      ], { signal, maxOutputBytes: MAX_FRAME_BYTES });
    } catch (e) {
      if (e instanceof MediaToolError) throw new ServiceError(422, 'no_video_stream', `the video stream cannot be decoded: ${e.message}`);
      throw e;
    }
    if (!r.output.byteLength) throw new ServiceError(422, 'no_video_stream', `no frame could be decoded at ${round3(at)} s`);
    const pts = /pts_time:\s*(-?[\d.]+)/.exec(r.log);
    const timestamp = pts ? Number(pts[1]) - info.startTime : at;
    return {
      bytes: r.output,
      contentType: FRAME_TYPES[o.format],
      info: { ...info, video: v },
      timestamp: round3(Math.max(0, timestamp)),
      mode,
    };
  }

  /** Of five times spread over the clip, the one whose frame has the most contrast among the frames that are not black. */
  private async representativeTime(tool: MediaTool, path: string, duration: number, signal?: AbortSignal): Promise<number> {
    if (!(duration > 0)) return 0;
    const times = [0.1, 0.25, 0.5, 0.75, 0.9].map((f) => round3(f * duration));
    const side = 32;
    const inputs = times.flatMap((t) => ['-ss', String(t), '-i', '']);
    // The five frames side by side in one 32·5 × 32 grey image: one decoder run for all candidates.
    const graph = times.map((_, k) => `[${k}:v:0]scale=${side}:${side},format=gray,setsar=1,setpts=PTS-STARTPTS[c${k}]`).join(';') +
      `;${times.map((_, k) => `[c${k}]`).join('')}hstack=inputs=${times.length}[out]`;
    let r;
    try {
      r = await tool.exec(
        path,
        (
          i,
          out,
        ) => [
          '-v',
          'error',
          ...inputs.map((a) => (a === '' ? i : a)),
          '-filter_complex',
          graph,
          '-map',
          '[out]',
          '-frames:v',
          '1',
          '-f',
          'rawvideo',
          out,
        ],
        { signal },
      );
    } catch {
      return times[2]!; // a candidate failed to decode: fall back to the middle of the clip
    }
    const row = side * times.length;
    if (r.output.byteLength < row * side) return times[2]!;
    let best = times[2]!, bestScore = -1;
    for (let k = 0; k < times.length; k++) {
      let sum = 0, sq = 0;
      for (let y = 0; y < side; y++) {
        for (let x = 0; x < side; x++) {
          const v = r.output[y * row + k * side + x]!;
          sum += v;
          sq += v * v;
        }
      }
      const n = side * side, mean = sum / n, sd = Math.sqrt(Math.max(0, sq / n - mean * mean));
      const score = mean < 16 ? sd / 100 : sd + 1; // black frames only win when every candidate is black
      if (score > bestScore) {
        bestScore = score;
        best = times[k]!;
      }
    }
    return best;
  }
}

/** 1–100 (higher is better, like libwebp's) to mjpeg's qscale 31–2. */
const jpegQ = (q: number) => Math.max(2, Math.min(31, Math.round(31 - ((q - 1) * 29) / 99)));
