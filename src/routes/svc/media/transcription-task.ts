/**
 * Transcription requests in both dialects: the native task (three input forms, JSON answer) and
 * OpenAI's multipart `/v1/audio/transcriptions` and `/v1/audio/translations` (docs/api/media.md).
 */
import type { Context } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { isMultipart } from '../../../http/multipart.ts';
import { admitTaskInput, type InputFile } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { invalidRequest, validate } from '../../../http/validate.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import { BinaryResult } from '../../../services/jobs/task.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import { formatTranscription, RESPONSE_FORMATS } from '../../../services/media/transcript-formats.ts';
import type { CheckedAudio, Transcription, TranscriptionService, TranscriptionTask } from '../../../services/media/transcription.ts';
import { text } from '../task-options.ts';

export interface TranscriptionRouteDeps {
  runner: TaskRunner;
  files: FileStore;
  transcription: TranscriptionService;
}

const DEFAULT_MODEL = 'whisper:tiny';
/** OpenAI's model name, which its clients and examples send: the default Whisper model here. */
const OPENAI_WHISPER = 'whisper-1';
const Granularity = v.picklist(['segment', 'word']);
const Options = v.object({
  model: v.optional(v.pipe(text, v.minLength(1)), DEFAULT_MODEL),
  language: v.optional(v.pipe(text, v.maxLength(40))),
  prompt: v.optional(v.pipe(text, v.maxLength(10_000))),
  response_format: v.optional(v.picklist(RESPONSE_FORMATS), 'json'),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  timestamp_granularities: v.optional(v.union([Granularity, v.array(Granularity)])),
  'timestamp_granularities[]': v.optional(v.union([Granularity, v.array(Granularity)])),
  task: v.optional(v.picklist(['transcribe', 'translate'])),
  stream: v.optional(v.pipe(v.union([v.boolean(), v.picklist(['true', 'false'])]), v.transform((x) => x === true || x === 'true'))),
});

const granularities = (o: v.InferOutput<typeof Options>) => [o.timestamp_granularities ?? [], o['timestamp_granularities[]'] ?? []].flat();

interface Input {
  file: InputFile;
  o: v.InferOutput<typeof Options>;
  task: TranscriptionTask;
  checked: CheckedAudio;
  cleanup(): Promise<void>;
}

async function readInput(
  c: Context<AppEnv>,
  deps: TranscriptionRouteDeps,
  task: TranscriptionTask | undefined,
  multipartOnly: boolean,
): Promise<Input> {
  if (multipartOnly && !isMultipart(c)) {
    throw invalidRequest('this route takes multipart/form-data with the audio in field "file"', [{ field: 'file', message: 'required' }]);
  }
  return admitTaskInput(c, deps.files, async (ti) => {
    if (ti.files.length !== 1) {
      throw invalidRequest(`transcription takes one audio or video file (got ${ti.files.length})`, [{
        field: 'file',
        message: ti.files.length ? 'too many' : 'required',
      }]);
    }
    const o = validate(Options, ti.options);
    const file = ti.files[0]!;
    // The input is read and refused (415/413/422/400) here, before admission and before the model is resolved.
    const checked = await deps.transcription.check(file.path, { language: o.language }, c.req.raw.signal);
    return { file, o, checked, task: task ?? o.task ?? 'transcribe', cleanup: ti.cleanup };
  });
}

function run(deps: TranscriptionRouteDeps, input: Input, signal: AbortSignal) {
  return deps.transcription.transcribe(
    input.file.path,
    {
      model: input.o.model,
      task: input.task,
      language: input.o.language,
      prompt: input.o.prompt,
      timestampGranularities: granularities(input.o),
    },
    signal,
    input.checked,
  );
}

/** POST /svc/v1/audio-transcription: the whole result (segments, VAD windows, decoder) as JSON. */
export const nativeTranscription = (deps: TranscriptionRouteDeps) =>
  taskHandler<Input>(deps.runner, {
    name: 'audio-transcription',
    input: (c) => readInput(c, deps, undefined, false),
    run: (input, ctx) => run(deps, input, ctx.signal),
    cleanup: (input) => input.cleanup(),
  });

/** Pieces of the text, one per segment where they join to it exactly (else the whole text as one). */
function textDeltas(t: Transcription): string[] {
  const pieces = t.segments.map((s) => s.text).filter((x) => x.length > 0);
  if (pieces.join('').trim() !== t.text || pieces.length === 0) return t.text ? [t.text] : [];
  pieces[0] = pieces[0]!.trimStart();
  pieces[pieces.length - 1] = pieces.at(-1)!.trimEnd();
  return pieces.filter((x) => x.length > 0);
}

/** OpenAI's streamed transcription events (`stream: true`): text deltas, then the done event with the text. */
function transcriptEvents(t: Transcription): BinaryResult {
  const events = [...textDeltas(t).map((delta) => ({ type: 'transcript.text.delta', delta })), {
    type: 'transcript.text.done',
    text: t.text,
  }];
  return new BinaryResult(
    new TextEncoder().encode(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')),
    'text/event-stream; charset=utf-8',
  );
}

/** OpenAI's transcriptions / translations: the body in the requested response_format. */
export const openaiTranscription = (deps: TranscriptionRouteDeps, task: TranscriptionTask) =>
  taskHandler<Input>(deps.runner, {
    name: task === 'translate' ? 'audio-translation' : 'audio-transcription',
    async input(c) {
      const input = await readInput(c, deps, task, true);
      if (input.o.model === OPENAI_WHISPER) input.o.model = DEFAULT_MODEL;
      if (input.o.stream && input.o.response_format !== 'json' && input.o.response_format !== 'text') {
        await input.cleanup();
        throw invalidRequest('stream: true gives transcript.text events; use response_format json or text with it', [{
          field: 'stream',
          message: `not with response_format ${input.o.response_format}`,
        }]);
      }
      return input;
    },
    async run(input, ctx) {
      const t = await run(deps, input, ctx.signal);
      if (input.o.stream) return transcriptEvents(t);
      const f = formatTranscription(t, input.o.response_format);
      if (f.contentType === 'application/json') return JSON.parse(f.body) as unknown;
      return new BinaryResult(new TextEncoder().encode(f.body), f.contentType);
    },
    cleanup: (input) => input.cleanup(),
  });
