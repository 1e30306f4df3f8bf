/** What a media file holds, read from ffprobe's JSON (both tools print the same). */

export interface VideoStreamInfo {
  codec: string;
  width: number;
  height: number;
  frameRate: number | null;
  duration: number | null;
}
export interface AudioStreamInfo {
  codec: string;
  sampleRate: number;
  channels: number;
}

export interface MediaInfo {
  /** ffmpeg's demuxer name(s), e.g. "mov,mp4,m4a,3gp,3g2,mj2". */
  container: string;
  /** Seconds (the container's, else the longest stream's), null when unknown. */
  duration: number | null;
  startTime: number;
  video: VideoStreamInfo | null;
  audio: AudioStreamInfo | null;
}

interface FfStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  sample_rate?: string;
  channels?: number;
  duration?: string;
  disposition?: { attached_pic?: number };
}
interface FfProbe {
  format?: { format_name?: string; duration?: string; start_time?: string };
  streams?: FfStream[];
}

const num = (s: string | undefined) => {
  const n = s === undefined ? NaN : Number(s);
  return Number.isFinite(n) ? n : null;
};
const rate = (s: string | undefined) => {
  const [a, b] = (s ?? '').split('/').map(Number);
  return a && b ? a / b : null;
};

/**
 * Media info, or null when the bytes are no media: no demuxer matched, no audio or video stream, or a still
 * image, or the text-terminal demuxer (`tty`), which takes any text file for an "ANSI art" video.
 */
export function mediaInfo(json: unknown): MediaInfo | null {
  const p = json as FfProbe | null;
  if (!p?.format || !Array.isArray(p.streams)) return null;
  const container = p.format.format_name ?? '';
  // Still images (png_pipe, jpeg_pipe, image2, ...) and text are no audio or video.
  if (container === 'tty' || container === 'image2' || /_pipe$/.test(container)) return null;
  // A still image attached to an audio file (cover art) is not a video stream.
  const v = p.streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic && s.codec_name && (s.width ?? 0) > 0);
  const a = p.streams.find((s) => s.codec_type === 'audio' && s.codec_name);
  const anyMedia = p.streams.some((s) => s.codec_type === 'audio' || s.codec_type === 'video');
  if (!anyMedia) return null;
  const streamDurations = p.streams.map((s) => num(s.duration)).filter((d): d is number => d !== null);
  return {
    container,
    duration: num(p.format.duration) ?? (streamDurations.length ? Math.max(...streamDurations) : null),
    startTime: num(p.format.start_time) ?? 0,
    video: v
      ? {
        codec: v.codec_name!,
        width: v.width!,
        height: v.height!,
        frameRate: rate(v.avg_frame_rate) ?? rate(v.r_frame_rate),
        duration: num(v.duration),
      }
      : null,
    audio: a ? { codec: a.codec_name!, sampleRate: Number(a.sample_rate ?? 0), channels: a.channels ?? 0 } : null,
  };
}
