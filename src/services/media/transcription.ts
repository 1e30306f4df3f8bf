/**
 * Whisper transcription and translation (docs/api/media.md): the file is decoded to 16 kHz mono PCM,
 * Silero VAD finds the speech, and the speech is cut into windows of at most 30 s (Whisper's input) at
 * silences, so no word is cut in two. Each window is one greedy Whisper decode with timestamp tokens;
 * segment times are the model's, offset by the window's start and kept inside the window.
 */
import type { PreTrainedModel, PreTrainedTokenizer, Processor } from '@huggingface/transformers';
import { invalidArgument, ServiceError } from '../errors.ts';
import type { ChatService } from '../chat/chat-service.ts';
import type { InferenceEngine } from '../inference/engine.ts';
import type { LoadedModel } from '../inference/load.ts';
import type { MediaService } from './media-service.ts';
import type { MediaTool } from './media-tool.ts';
import type { MediaInfo } from './probe.ts';
import { speechProbabilities, VAD_SAMPLE_RATE, VAD_WINDOW } from './silero-vad.ts';
import { speechRanges, VAD_DEFAULTS } from './speech-ranges.ts';
import { WHISPER_LANGUAGE_ALIASES, WHISPER_LANGUAGES } from './whisper-languages.ts';

export type TranscriptionTask = 'transcribe' | 'translate';
export interface TranscriptionOptions {
  model: string;
  task: TranscriptionTask;
  /** ISO-639-1 code or English name; absent: detected on the first speech window (multilingual models). */
  language?: string;
  /** Text the model continues from (names, spelling): Whisper's previous-context prompt. */
  prompt?: string;
  timestampGranularities?: ('segment' | 'word')[];
  keepAlive?: unknown;
}
/** A file check() accepted: the tool that read it and what it holds. */
export interface CheckedAudio {
  tool: MediaTool;
  info: MediaInfo;
}
export interface TranscriptionSegment {
  id: number;
  seek: number;
  start: number;
  end: number;
  text: string;
  tokens: number[];
  temperature: number;
}
export interface TranscriptionWord {
  word: string;
  start: number;
  end: number;
}
export interface Transcription {
  task: TranscriptionTask;
  model: string;
  /** Language code the text was decoded as (`null` for an English-only model: always English). */
  language: string;
  duration: number;
  text: string;
  segments: TranscriptionSegment[];
  /** Word timestamps, when asked for (`timestamp_granularities` with `word`). */
  words?: TranscriptionWord[];
  /** The windows the audio was cut into (seconds); each begins and ends in a silence the VAD found. */
  chunks: { start: number; end: number }[];
  decoder: 'system' | 'wasm';
}

const WINDOW_S = 30;
const MAX_AUDIO_S = 4 * 3600;
const TIME_PRECISION = 0.02;
/** Half a second of context either side where the silence allows it, so word edges are never clipped. */
const CHUNK_VAD = { ...VAD_DEFAULTS, speech_pad_ms: 300, min_silence_duration_ms: 300, max_speech_duration_s: 28 };
const round2 = (x: number) => Math.round(x * 100) / 100;

interface WhisperGen {
  decoder_start_token_id: number;
  no_timestamps_token_id: number;
  prev_sot_token_id?: number;
  is_multilingual?: boolean;
  lang_to_id?: Record<string, number>;
  task_to_id?: Record<string, number>;
  max_length?: number;
  alignment_heads?: [number, number][];
}
/** Audio samples (16 kHz) per encoder position: 10 ms mel hop × the encoder's stride of 2. */
const SAMPLES_PER_ENCODER_FRAME = 320;

export class TranscriptionService {
  constructor(private readonly deps: { media: MediaService; chat: ChatService; engine: InferenceEngine }) {}

  /**
   * Everything about the input that can be refused without the model: media type (415), an audio track
   * (422), its length (413), the language name (400). Runs before the model is resolved, so bad input
   * never waits on (or fails with) a model pull.
   */
  async check(path: string, o: Pick<TranscriptionOptions, 'language'>, signal?: AbortSignal): Promise<CheckedAudio> {
    if (o.language) languageCode(o.language);
    const tool = await this.deps.media.tool();
    if (!tool) {
      throw new ServiceError(
        501,
        'capability_unavailable',
        'transcription needs ffmpeg: install it or allow its WASM build (setting ffmpegWasm)',
      );
    }
    const info = await this.deps.media.info(path, signal);
    if (!info.audio) throw new ServiceError(422, 'no_audio_track', 'the file has no audio track (a video without sound?)');
    if (info.duration !== null && info.duration > MAX_AUDIO_S) {
      throw new ServiceError(
        413,
        'input_too_large',
        `the audio lasts ${Math.round(info.duration)} s; at most ${MAX_AUDIO_S} s are transcribed`,
      );
    }
    return { tool, info };
  }

  /** `checked`: what check() answered for this file, when the caller already ran it. */
  async transcribe(path: string, o: TranscriptionOptions, signal?: AbortSignal, checked?: CheckedAudio): Promise<Transcription> {
    const { tool } = checked ?? (await this.check(path, o, signal));

    // One decode: the PCM is kept for Whisper while Silero VAD reads it. Decoding comes before the model
    // is resolved, so audio that cannot be decoded is refused (422) without touching the model store.
    const parts: Float32Array[] = [];
    const pcmTee = (async function* (src: AsyncIterable<Float32Array>) {
      for await (const c of src) {
        parts.push(c);
        yield c;
      }
    })(this.deps.media.decodeAudio(tool, path, signal));
    const { probs, samples } = await speechProbabilities(pcmTee, signal);
    const pcm = new Float32Array(samples);
    let off = 0;
    for (const p of parts) {
      pcm.set(p.subarray(0, samples - off), off);
      off += p.length;
    }
    const windows = speechWindows(speechRanges(probs, samples, VAD_WINDOW, VAD_SAMPLE_RATE, CHUNK_VAD));

    const m = await this.deps.chat.resolve(o.model, 'speech');
    const lease = await this.deps.engine.residency.acquire(m.engineSpec, { signal });
    try {
      const r = await decodeWindows(lease.model, pcm, windows, o, signal);
      return { task: o.task, model: m.name, duration: round2(samples / VAD_SAMPLE_RATE), decoder: tool.kind, ...r };
    } finally {
      lease.release();
    }
  }
}

/** Speech ranges (samples) grouped into windows of at most 30 s; a window only ever ends where a range ends. */
export function speechWindows(ranges: { start: number; end: number }[]): { start: number; end: number }[] {
  const max = WINDOW_S * VAD_SAMPLE_RATE;
  const out: { start: number; end: number }[] = [];
  for (const r of ranges) {
    const last = out.at(-1);
    if (last && r.end - last.start <= max) last.end = r.end;
    else {
      // a single range is at most 28 s (max_speech_duration_s) plus padding; clamp for safety
      out.push({ start: r.start, end: Math.min(r.end, r.start + max) });
    }
  }
  return out;
}

async function decodeWindows(
  lm: LoadedModel,
  pcm: Float32Array,
  windows: { start: number; end: number }[],
  o: TranscriptionOptions,
  signal?: AbortSignal,
) {
  const model = lm.model as PreTrainedModel;
  const tok = lm.tokenizer as PreTrainedTokenizer;
  const processor = lm.processor as Processor;
  const gen = (model as unknown as { generation_config: WhisperGen }).generation_config;
  const multilingual = Boolean(gen.is_multilingual && gen.lang_to_id && gen.task_to_id);
  if (!multilingual && (o.task === 'translate' || (o.language && languageCode(o.language) !== 'en'))) {
    throw invalidArgument(
      `"${o.model}" is an English-only model: ${o.task === 'translate' ? 'it cannot translate' : 'it only transcribes English'}`,
    );
  }
  let language = o.language ? languageCode(o.language) : undefined;
  if (language && multilingual && gen.lang_to_id![`<|${language}|>`] === undefined) {
    throw invalidArgument(`"${o.model}" does not know the language "${o.language}"`, [{
      field: 'language',
      message: 'unsupported by this model',
    }]);
  }
  const tsBegin = gen.no_timestamps_token_id + 1;
  const eot = Number((model.config as unknown as { eos_token_id: number }).eos_token_id);
  const promptIds = o.prompt ? tok.encode(' ' + o.prompt.trim(), { add_special_tokens: false }) : [];
  const maxLen = gen.max_length ?? 448;
  const prefix = promptIds.length && gen.prev_sot_token_id !== undefined
    ? [gen.prev_sot_token_id, ...promptIds.slice(-Math.floor(maxLen / 2) + 1)]
    : [];
  const int64 = (ids: number[]) => new lm.tf.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
  const wantWords = o.timestampGranularities?.includes('word') ?? false;
  if (wantWords) assertWordTimestamps(model, gen, o.model);

  const segments: TranscriptionSegment[] = [];
  const words: TranscriptionWord[] = [];
  const texts: string[] = [];
  for (const w of windows) {
    signal?.throwIfAborted();
    const audio = pcm.subarray(w.start, w.end);
    const { input_features } = await processor(audio);
    if (multilingual && !language) language = await detectLanguage(model, gen, input_features, int64);
    const init = [
      ...prefix,
      gen.decoder_start_token_id,
      ...(multilingual ? [gen.lang_to_id![`<|${language}|>`]!, gen.task_to_id![o.task]!] : []),
    ];
    const out = (await model.generate({
      inputs: input_features,
      decoder_input_ids: int64(init),
      return_timestamps: true,
      max_new_tokens: maxLen - init.length - 1,
      do_sample: false,
      num_beams: 1,
      // Token times from the cross-attentions of the alignment heads (dynamic time warping), over the
      // encoder positions that hold this window's audio.
      ...(wantWords ? { return_token_timestamps: true, num_frames: Math.max(1, Math.ceil(audio.length / SAMPLES_PER_ENCODER_FRAME)) } : {}),
    } as never)) as unknown as Seq | { sequences: Seq; token_timestamps: { tolist(): number[][] } };
    const seq = 'sequences' in out ? out.sequences : out;
    const all = seq.tolist()[0]!.map(Number);
    const ids = all.slice(init.length).filter((t) => t !== eot);
    const winStart = w.start / VAD_SAMPLE_RATE, winEnd = w.end / VAD_SAMPLE_RATE;
    if ('token_timestamps' in out) {
      const times = out.token_timestamps.tolist()[0]!;
      for (const wd of wordTimes(all, times, init.length, (id) => id < eot, (t) => tok.decode(t))) {
        const prevEnd = words.at(-1)?.end ?? 0;
        const start = round2(Math.min(winEnd, Math.max(prevEnd, winStart + wd.start)));
        words.push({ word: wd.word, start, end: round2(Math.min(winEnd, Math.max(start, winStart + wd.end))) });
      }
    }
    for (const s of timestampSegments(ids, tsBegin, winEnd - winStart)) {
      const text = tok.decode(s.tokens, { skip_special_tokens: true });
      if (!text.trim()) continue;
      const prevEnd = segments.at(-1)?.end ?? 0;
      const start = round2(Math.max(prevEnd, winStart + s.start));
      const end = round2(Math.min(winEnd, Math.max(start, winStart + s.end)));
      segments.push({
        id: segments.length,
        seek: Math.round(winStart * 100),
        start,
        end: Math.max(start, end),
        text,
        tokens: s.tokens,
        temperature: 0,
      });
      texts.push(text);
    }
  }
  return {
    language: language ?? 'en',
    text: texts.join('').trim(),
    segments,
    ...(wantWords ? { words } : {}),
    chunks: windows.map((w) => ({ start: round2(w.start / VAD_SAMPLE_RATE), end: round2(w.end / VAD_SAMPLE_RATE) })),
  };
}

type Seq = { tolist(): bigint[][] };

/** 400 when the model's export cannot give word timestamps: no alignment heads, or no cross-attention outputs. */
function assertWordTimestamps(model: PreTrainedModel, gen: WhisperGen, name: string) {
  const sessions = (model as unknown as { sessions?: Record<string, { outputNames?: string[] }> }).sessions ?? {};
  const crossAttentions = Object.values(sessions).some((s) => s.outputNames?.some((n) => n.startsWith('cross_attentions')));
  if (!gen.alignment_heads?.length || !crossAttentions) {
    throw invalidArgument(
      `"${name}" gives no word timestamps: its export has no cross-attention outputs or alignment heads (use a *_timestamped export)`,
      [{ field: 'timestamp_granularities', message: 'only "segment" with this model' }],
    );
  }
}

/**
 * Words of one decode with their times (seconds in the window): text tokens are grouped into words at a
 * leading space; a word starts at its first token's time and ends where the token after it starts.
 */
export function wordTimes(
  ids: number[],
  times: number[],
  from: number,
  isText: (id: number) => boolean,
  decode: (ids: number[]) => string,
): { word: string; start: number; end: number }[] {
  const out: { word: string; start: number; end: number }[] = [];
  let cur: { ids: number[]; start: number } | null = null;
  const close = (endIndex: number) => {
    if (!cur) return;
    const word = decode(cur.ids).trim();
    const end = times[Math.min(endIndex, times.length - 1)] ?? cur.start;
    if (word) out.push({ word, start: cur.start, end: Math.max(cur.start, end) });
    cur = null;
  };
  for (let i = from; i < ids.length; i++) {
    const id = ids[i]!;
    if (!isText(id)) {
      close(i);
      continue;
    }
    if (cur && /^\s/.test(decode([id]))) close(i);
    if (cur) cur.ids.push(id);
    else cur = { ids: [id], start: times[i] ?? 0 };
  }
  close(ids.length);
  return out;
}

/**
 * Text between timestamp tokens. Times are relative to the window and made monotonic and inside
 * [0, windowSeconds]: Whisper can emit timestamps past the audio or out of order (hallucination).
 */
export function timestampSegments(ids: number[], tsBegin: number, windowSeconds: number) {
  const out: { start: number; end: number; tokens: number[] }[] = [];
  let start: number | null = null, last = 0, tokens: number[] = [];
  const clamp = (t: number) => Math.min(windowSeconds, Math.max(last, t));
  for (const id of ids) {
    if (id >= tsBegin) {
      const t = clamp((id - tsBegin) * TIME_PRECISION);
      if (tokens.length) {
        out.push({ start: start ?? last, end: t, tokens });
        tokens = [];
        start = null;
      } else start = t;
      last = t;
    } else tokens.push(id);
  }
  if (tokens.length) out.push({ start: start ?? last, end: windowSeconds, tokens });
  return out;
}

/** Whisper's own language identification: the most likely language token after <|startoftranscript|>. */
async function detectLanguage(
  model: PreTrainedModel,
  gen: WhisperGen,
  input_features: unknown,
  int64: (ids: number[]) => unknown,
): Promise<string> {
  const out = await (model as unknown as (x: unknown) => Promise<{ logits: { data: Float32Array; dims: number[] } }>)({
    input_features,
    decoder_input_ids: int64([gen.decoder_start_token_id]),
  });
  const vocab = out.logits.dims.at(-1)!;
  const row = out.logits.data.subarray(out.logits.data.length - vocab);
  let best = 'en', bestLogit = -Infinity;
  for (const [token, id] of Object.entries(gen.lang_to_id!)) {
    if (row[id]! > bestLogit) {
      bestLogit = row[id]!;
      best = token.slice(2, -2);
    }
  }
  return best;
}

/** ISO-639-1 code of a language given as a code or an English name ("de", "German"); 400 when unknown. */
export function languageCode(language: string): string {
  const l = language.trim().toLowerCase();
  if (WHISPER_LANGUAGES.has(l)) return l;
  for (const [code, name] of WHISPER_LANGUAGES) if (name === l) return code;
  const alias = WHISPER_LANGUAGE_ALIASES.get(l);
  if (alias) return alias;
  throw invalidArgument(`unknown language "${language}"`, [{
    field: 'language',
    message: 'an ISO-639-1 code such as "en" or an English name',
  }]);
}

/** English name of a language code, as OpenAI's verbose_json reports it. */
export const languageName = (code: string) => WHISPER_LANGUAGES.get(code) ?? code;
