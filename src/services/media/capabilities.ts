/**
 * What this machine's media tool can read and write, measured by asking it (`ffmpeg -demuxers`,
 * `-decoders`, `-encoders`), not assumed: Debian's ffmpeg, a static build and the WASM build differ.
 */
import type { MediaTool } from './media-tool.ts';

export interface MediaCapabilities {
  media_tool: 'system' | 'wasm' | null;
  /** File extensions of audio files whose container the tool can demux. */
  audio_formats: string[];
  /** File extensions of video files whose container the tool can demux. */
  video_formats: string[];
  audio_codecs: string[];
  video_codecs: string[];
  /** Image formats a frame can be encoded to. */
  image_formats: string[];
}

// Extension → the ffmpeg demuxer that reads it.
const AUDIO: Record<string, string> = {
  wav: 'wav',
  mp3: 'mp3',
  flac: 'flac',
  ogg: 'ogg',
  oga: 'ogg',
  opus: 'ogg',
  m4a: 'mov',
  aac: 'aac',
  wma: 'asf',
  aif: 'aiff',
  aiff: 'aiff',
  amr: 'amr',
  caf: 'caf',
  au: 'au',
  mka: 'matroska',
  weba: 'matroska',
  ac3: 'ac3',
};
const VIDEO: Record<string, string> = {
  mp4: 'mov',
  m4v: 'mov',
  mov: 'mov',
  '3gp': 'mov',
  mkv: 'matroska',
  webm: 'matroska',
  avi: 'avi',
  flv: 'flv',
  ts: 'mpegts',
  mts: 'mpegts',
  m2ts: 'mpegts',
  mpg: 'mpeg',
  mpeg: 'mpeg',
  ogv: 'ogg',
  wmv: 'asf',
  asf: 'asf',
};
const IMAGE_ENCODERS: Record<string, string> = { png: 'png', jpeg: 'mjpeg', webp: 'libwebp' };

/** Names in an ffmpeg listing (`flags name[,alias] description`), for rows whose flags pass `want`. */
export function listingNames(text: string, want: (flags: string) => boolean): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z.]{1,6})\s+(\S+)/.exec(line);
    if (!m || m[2] === '=' || !want(m[1]!)) continue;
    for (const n of m[2]!.split(',')) names.add(n);
  }
  return names;
}

export async function measureCapabilities(tool: MediaTool | null): Promise<MediaCapabilities> {
  if (!tool) return { media_tool: null, audio_formats: [], video_formats: [], audio_codecs: [], video_codecs: [], image_formats: [] };
  const [demux, dec, enc] = await Promise.all([tool.listing('-demuxers'), tool.listing('-decoders'), tool.listing('-encoders')]);
  const demuxers = listingNames(demux, (f) => f.includes('D'));
  const decoders = { audio: listingNames(dec, (f) => f[0] === 'A'), video: listingNames(dec, (f) => f[0] === 'V') };
  const encoders = listingNames(enc, (f) => f[0] === 'V');
  const readable = (map: Record<string, string>) => Object.keys(map).filter((ext) => demuxers.has(map[ext]!)).sort();
  return {
    media_tool: tool.kind,
    audio_formats: readable(AUDIO),
    video_formats: readable(VIDEO),
    audio_codecs: [...decoders.audio].sort(),
    video_codecs: [...decoders.video].sort(),
    image_formats: Object.keys(IMAGE_ENCODERS).filter((f) => encoders.has(IMAGE_ENCODERS[f]!)),
  };
}
