/**
 * Media routes (docs/api/media.md): voice activity detection (JSON and multipart forms, job contract),
 * video frames and their capabilities, and the decodable formats of audio transcription.
 */
import { type Context, Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { isMultipart } from '../../../http/multipart.ts';
import { admitTaskInput, type InputFile } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { invalidRequest, validate } from '../../../http/validate.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import type { MediaService } from '../../../services/media/media-service.ts';
import type { VadOptions } from '../../../services/media/speech-ranges.ts';
import type { TranscriptionService } from '../../../services/media/transcription.ts';
import { nativeTranscription } from './transcription-task.ts';
import { RESPONSE_FORMATS } from '../../../services/media/transcript-formats.ts';

export interface MediaRouteDeps {
  runner: TaskRunner;
  files: FileStore;
  media: MediaService;
  transcription: TranscriptionService;
}

const ms = (max: number) => v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(max));
const Vad = v.strictObject({
  threshold: v.optional(v.pipe(v.number(), v.minValue(0.02), v.maxValue(1))),
  min_speech_duration_ms: v.optional(ms(600_000)),
  min_silence_duration_ms: v.optional(ms(600_000)),
  speech_pad_ms: v.optional(ms(10_000)),
  max_speech_duration_s: v.optional(v.pipe(v.number(), v.minValue(1))),
});
const VadRequest = v.object({ vad: v.optional(Vad) });

interface VadInput {
  file: InputFile;
  vad: Partial<VadOptions>;
  cleanup(): Promise<void>;
}

function vadHandler(deps: MediaRouteDeps, form: 'json' | 'file') {
  return taskHandler<VadInput>(deps.runner, {
    name: 'voice-activity-detection',
    async input(c) {
      if (form === 'file' && !isMultipart(c)) {
        throw invalidRequest('this route takes multipart/form-data with the audio in field "file"', [{
          field: 'file',
          message: 'required',
        }]);
      }
      return admitTaskInput(c, deps.files, (ti) => {
        if (ti.files.length !== 1) {
          throw invalidRequest(`voice activity detection takes one audio or video file (got ${ti.files.length})`, [{
            field: 'file',
            message: ti.files.length ? 'too many' : 'required',
          }]);
        }
        const o = validate(VadRequest, ti.options);
        return { file: ti.files[0]!, vad: o.vad ?? {}, cleanup: ti.cleanup };
      });
    },
    run: (input, ctx) => deps.media.detectSpeech(input.file.path, input.vad, ctx.signal),
    cleanup: (input) => input.cleanup(),
  });
}

const num = v.pipe(v.string(), v.transform(Number), v.number('must be a number'));
const FrameQuery = v.object({
  at: v.optional(v.pipe(num, v.minValue(0))),
  format: v.optional(
    v.pipe(v.string(), v.transform((s) => (s.toLowerCase() === 'jpg' ? 'jpeg' : s.toLowerCase())), v.picklist(['png', 'jpeg', 'webp'])),
    'png',
  ),
  width: v.optional(v.pipe(num, v.integer(), v.minValue(1), v.maxValue(8192))),
  height: v.optional(v.pipe(num, v.integer(), v.minValue(1), v.maxValue(8192))),
  quality: v.optional(v.pipe(num, v.integer(), v.minValue(1), v.maxValue(100))),
});

const header = (x: number | null) => (x === null ? 'unknown' : String(x));

export function mediaRoutes(deps: MediaRouteDeps) {
  const app = new Hono<AppEnv>();

  app.post('/voice-activity-detection', vadHandler(deps, 'json'));
  app.post('/voice-activity-detection/file', vadHandler(deps, 'file'));

  const frameCapabilities = async (c: Context<AppEnv>) => {
    const caps = await deps.media.capabilities();
    return c.json({
      media_tool_available: caps.media_tool !== null,
      media_tool: caps.media_tool,
      accepted_containers: caps.video_formats,
      video_codecs: caps.video_codecs,
      image_formats: caps.image_formats,
      query_parameters: ['at', 'format', 'width', 'height', 'quality'],
    });
  };

  // One route for both: a static `capabilities` route beside the `:fileId` pattern is a conflict Hono's
  // RegExpRouter cannot compile, and the app (src/app.ts) uses that router only.
  app.get('/video-frames/:fileId', async (c: Context<AppEnv>) => {
    if (c.req.param('fileId') === 'capabilities') return frameCapabilities(c);
    const q = validate(FrameQuery, c.req.query());
    const file = await deps.files.get(c.get('owner').id, c.req.param('fileId')!);
    const f = await deps.media.frame(file.path, q, c.req.raw.signal);
    return c.body(f.bytes as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': f.contentType,
      'X-Video-Duration-Seconds': header(f.info.duration),
      'X-Video-Width': String(f.info.video.width),
      'X-Video-Height': String(f.info.video.height),
      'X-Video-Codec': f.info.video.codec,
      'X-Video-Has-Audio': String(f.info.audio !== null),
      'X-Frame-Timestamp-Seconds': String(f.timestamp),
      'X-Frame-Timestamp-Mode': f.mode,
    });
  });

  app.post('/audio-transcription', nativeTranscription(deps));

  app.get('/audio-transcription/capabilities', async (c) => {
    const caps = await deps.media.capabilities();
    return c.json({
      media_tool_available: caps.media_tool !== null,
      media_tool: caps.media_tool,
      audio_formats: caps.audio_formats,
      video_formats: caps.video_formats,
      audio_codecs: caps.audio_codecs,
      tasks: ['transcribe', 'translate'],
      response_formats: RESPONSE_FORMATS,
      // word: with models whose export has cross-attention outputs (the catalog's *_timestamped exports)
      timestamp_granularities: ['segment', 'word'],
      language_detection: true,
      chunking: 'voice-activity-detection',
      max_window_seconds: 30,
    });
  });

  return app;
}
