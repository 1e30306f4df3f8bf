/**
 * A transcription in OpenAI's response formats: json, text, srt, vtt, verbose_json
 * (docs/api/media.md). Subtitle cues are the segments; times are HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (WebVTT).
 */
import { languageName, type Transcription } from './transcription.ts';

export type ResponseFormat = 'json' | 'text' | 'srt' | 'vtt' | 'verbose_json';
export const RESPONSE_FORMATS: readonly ResponseFormat[] = ['json', 'text', 'srt', 'vtt', 'verbose_json'];

function clock(seconds: number, sep: ',' | '.'): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000), m = Math.floor(ms / 60_000) % 60, s = Math.floor(ms / 1000) % 60;
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(h)}:${p(m)}:${p(s)}${sep}${p(ms % 1000, 3)}`;
}

/** Body and content type of one format. */
export function formatTranscription(t: Transcription, format: ResponseFormat): { body: string; contentType: string } {
  switch (format) {
    case 'text':
      return { body: t.text + '\n', contentType: 'text/plain; charset=utf-8' };
    case 'srt':
      return {
        body: t.segments.map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text.trim()}\n`).join('\n'),
        contentType: 'application/x-subrip; charset=utf-8',
      };
    case 'vtt':
      return {
        body: 'WEBVTT\n\n' + t.segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text.trim()}\n`).join('\n'),
        contentType: 'text/vtt; charset=utf-8',
      };
    case 'verbose_json':
      return {
        body: JSON.stringify({
          task: t.task,
          language: languageName(t.language),
          duration: t.duration,
          text: t.text,
          segments: t.segments.map((s) => ({
            id: s.id,
            seek: s.seek,
            start: s.start,
            end: s.end,
            text: s.text,
            tokens: s.tokens,
            temperature: s.temperature,
          })),
          ...(t.words ? { words: t.words } : {}),
        }),
        contentType: 'application/json',
      };
    default:
      return { body: JSON.stringify({ text: t.text }), contentType: 'application/json' };
  }
}
