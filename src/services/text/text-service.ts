/**
 * Text tasks over plain values (docs/api/text.md): the fast non-model paths (language, PII, keywords,
 * entities, lexicon sentiment) and the chat-model paths (summarise, translate, rewrite, correct, extract,
 * categorise, model sentiment). Every result names the model or method that produced it.
 */
import type { ChatService } from '../chat/chat-service.ts';
import { invalidArgument } from '../errors.ts';
import type { ModelServices } from '../models/model-services.ts';
import type { TrainingService } from '../training/training-service.ts';
import { textChunks } from './chunks.ts';
import { textEdits } from './edits.ts';
import { entitiesOf, keywordsOf, languageOf, piiOf, type PiiOptions, TEXT_OFF_LOOP_CHARS } from './fast-tasks.ts';
import { generateText } from './generate.ts';
import { requireLanguage } from './language.ts';
import { markdownSegments } from './markdown-segments.ts';
import { sentences } from './sentences.ts';
import { lexiconSentiment, SENTIMENT_METHOD } from './sentiment.ts';
import { summarize, type SummarizeOptions } from './summarize.ts';
import { workers } from '../workers/index.ts';

export interface Run {
  model?: string;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

export class TextService {
  readonly #chat: ChatService;
  readonly #models: ModelServices;
  readonly #training: TrainingService;
  readonly #defaultModel: string;

  constructor(o: { chat: ChatService; models: ModelServices; training: TrainingService; defaultModel: string }) {
    this.#chat = o.chat;
    this.#models = o.models;
    this.#training = o.training;
    this.#defaultModel = o.defaultModel;
  }

  #model(r: Run) {
    return r.model || this.#defaultModel;
  }

  detectLanguage(text: string, signal?: AbortSignal) {
    return text.length < TEXT_OFF_LOOP_CHARS ? languageOf(text) : workers.run('text.language', [text], { signal });
  }

  async pii(text: string, o: PiiOptions, signal?: AbortSignal) {
    return text.length < TEXT_OFF_LOOP_CHARS ? piiOf(text, o) : workers.run('text.pii', [text, o], { signal });
  }

  async keywords(text: string, o: { limit: number; maxWords: number }, signal?: AbortSignal) {
    return text.length < TEXT_OFF_LOOP_CHARS ? keywordsOf(text, o) : workers.run('text.keywords', [text, o], { signal });
  }

  async entities(text: string, o: { types?: string[] }, signal?: AbortSignal) {
    return text.length < TEXT_OFF_LOOP_CHARS ? entitiesOf(text, o) : workers.run('text.entities', [text, o], { signal });
  }

  async sentiment(text: string, r: Run) {
    if (!r.model) return { method: SENTIMENT_METHOD, ...lexiconSentiment(text) };
    const parts = sentences(text);
    const label = { enum: ['positive', 'negative', 'neutral', 'mixed'] };
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['overall', 'sentences'],
      properties: {
        overall: label,
        sentences: { type: 'array', items: { enum: ['positive', 'negative', 'neutral'] }, minItems: parts.length, maxItems: parts.length },
      },
    };
    const g = await generateText(this.#chat, {
      model: r.model,
      format: schema,
      signal: r.signal,
      system: 'You judge the sentiment of a text: overall, and of each numbered sentence in order. Answer in JSON.',
      user: parts.map((p, i) => `${i + 1}. ${p.text}`).join('\n'),
    });
    const out = JSON.parse(g.text) as { overall: string; sentences: string[] };
    r.progress?.(1, 1);
    return {
      model: g.model,
      method: 'chat model, constrained output',
      overall: { label: out.overall },
      sentences: parts.map((p, i) => ({ ...p, label: out.sentences[i] })),
    };
  }

  async summarize(text: string, o: Omit<SummarizeOptions, 'chat' | 'model'>, r: Run) {
    return summarize(text, { ...o, chat: this.#chat, model: this.#model(r), signal: r.signal, progress: r.progress });
  }

  async translate(text: string, o: { target: string; source?: string }, r: Run) {
    const target = requireLanguage(o.target, 'target_language');
    let source = o.source ? requireLanguage(o.source, 'source_language') : undefined;
    let detected;
    if (!source) {
      detected = await this.detectLanguage(text, r.signal);
      if (detected.language !== 'und') source = { code: detected.language, name: detected.name };
    }
    const seg = markdownSegments(text);
    const model = this.#model(r);
    let used = model;
    const out: string[] = [];
    const memo = new Map<string, string>();
    for (let i = 0; i < seg.texts.length; i++) {
      const t = seg.texts[i]!;
      let tr = memo.get(t);
      if (tr === undefined) {
        if (!/\p{L}/u.test(t) || (source && source.code.split('-')[0] === target.code.split('-')[0] && source.code === target.code)) tr = t;
        else {
          const g = await generateText(this.#chat, {
            model,
            signal: r.signal,
            system: `You translate text${
              source ? ` from ${source.name}` : ''
            } into ${target.name}. Keep inline Markdown (*, **, [ ], links) and placeholders like ⟦0⟧ exactly. Answer with the translation only.`,
            user: t,
          });
          used = g.model;
          tr = g.text;
        }
        memo.set(t, tr);
      }
      out.push(tr);
      r.progress?.(i + 1, seg.texts.length);
    }
    return {
      model: used,
      method: 'chat model, segment by segment (Markdown block structure kept)',
      source_language: source?.code ?? null,
      ...(detected ? { detected_source_language: { language: detected.language, confidence: detected.confidence } } : {}),
      target_language: target.code,
      segments: seg.texts.length,
      translation: seg.assemble(out),
    };
  }

  /** Chunk by chunk (a long text is never truncated), each chunk by one call. */
  async #perChunk(text: string, chunkTokens: number, r: Run, system: string) {
    const chunks = textChunks(text, chunkTokens);
    const model = this.#model(r);
    let used = model;
    const out: string[] = [];
    for (let i = 0; i < chunks.length; i++) {
      const g = await generateText(this.#chat, { model, system, user: chunks[i]!, signal: r.signal });
      used = g.model;
      out.push(g.text);
      r.progress?.(i + 1, chunks.length);
    }
    return { model: used, chunks: chunks.length, text: out.join('\n\n') };
  }

  async rewrite(
    text: string,
    o: { tone?: string; audience?: string; length: 'shorter' | 'same' | 'longer'; instructions?: string; chunkTokens: number },
    r: Run,
  ) {
    const asks = [
      o.tone ? `Use a ${o.tone} tone.` : '',
      o.audience ? `Write for ${o.audience}.` : '',
      o.length === 'shorter'
        ? 'Make it noticeably shorter.'
        : o.length === 'longer'
        ? 'Make it somewhat longer, adding no new facts.'
        : 'Keep about the same length.',
      o.instructions ?? '',
    ].filter(Boolean).join(' ');
    const g = await this.#perChunk(
      text,
      o.chunkTokens,
      r,
      `You rewrite text. Keep its meaning, facts and language, and its Markdown structure. ${asks} Answer with the rewritten text only.`,
    );
    return { model: g.model, method: 'chat model', chunks: g.chunks, text: g.text };
  }

  async correct(text: string, o: { chunkTokens: number }, r: Run) {
    const g = await this.#perChunk(
      text,
      o.chunkTokens,
      r,
      'You correct spelling, grammar and punctuation. Change nothing else: keep wording, meaning, language and formatting. Answer with the corrected text only.',
    );
    // chunks were joined with blank lines: compare against the input normalised the same way
    const original = g.chunks > 1 ? textChunks(text, o.chunkTokens).join('\n\n') : text;
    return { model: g.model, method: 'chat model; edits by word-level diff', corrected_text: g.text, edits: textEdits(original, g.text) };
  }

  async extract(text: string, o: { schema: Record<string, unknown>; instructions?: string }, r: Run) {
    const g = await generateText(this.#chat, {
      model: this.#model(r),
      format: o.schema,
      signal: r.signal,
      system: `You extract information from a text into JSON that matches this schema: ${
        JSON.stringify(o.schema)
      }. Take values from the text only. ${o.instructions ?? ''}`.trim(),
      user: text,
    });
    r.progress?.(1, 1);
    return { model: g.model, method: 'chat model, constrained decoding (JSON schema)', data: JSON.parse(g.text) as unknown };
  }

  async categorize(text: string, o: { labels?: string[]; multiLabel: boolean }, r: Run) {
    const name = this.#model(r);
    const { spec } = await this.#models.pulls.resolve(name);
    if (spec.kind === 'classifier') {
      const c = await this.#training.classify(name, [text], { signal: r.signal });
      const res = c.results[0]!;
      if (o.labels && o.labels.some((l) => !(l in res.scores))) {
        throw invalidArgument(`labels: classifier "${c.model}" knows only ${Object.keys(res.scores).join(', ')}`, [{
          field: 'labels',
          message: 'unknown label for this classifier',
        }]);
      }
      return { model: c.model, method: `trained classifier head over ${c.embedding_model}`, ...ranked(res.scores, o.multiLabel) };
    }
    const labels = requireLabels(o.labels);
    if (spec.kind === 'embedding') {
      const e = await this.#chat.embed(name, [text, ...labels.map((l) => `This text is about ${l}.`)], { signal: r.signal });
      const [t, ...ls] = e.vectors;
      const sims = ls.map((v) => cosine(t!, v));
      // softmax over cosine similarities with the temperature CLIP-style zero-shot uses (1/100)
      const ex = sims.map((s) => Math.exp(100 * (s - Math.max(...sims))));
      const sum = ex.reduce((a, b) => a + b, 0);
      const scores = Object.fromEntries(labels.map((l, i) => [l, o.multiLabel ? (sims[i]! + 1) / 2 : ex[i]! / sum]));
      return { model: e.model, method: 'zero-shot by embedding similarity', ...ranked(scores, o.multiLabel) };
    }
    const schema = o.multiLabel
      ? {
        type: 'object',
        additionalProperties: false,
        required: ['labels'],
        properties: { labels: { type: 'array', items: { enum: labels }, minItems: 1, maxItems: labels.length } },
      }
      : { type: 'object', additionalProperties: false, required: ['label'], properties: { label: { enum: labels } } };
    const g = await generateText(this.#chat, {
      model: name,
      format: schema,
      signal: r.signal,
      system: `You classify a text into ${o.multiLabel ? 'every fitting one' : 'exactly one'} of these labels: ${
        labels.map((l) => JSON.stringify(l)).join(', ')
      }. Answer in JSON.`,
      user: text,
    });
    const out = JSON.parse(g.text) as { label?: string; labels?: string[] };
    const chosen = [...new Set(out.labels ?? [out.label!])];
    return {
      model: g.model,
      method: 'chat model, constrained output (no scores)',
      label: chosen[0]!,
      labels: chosen.map((label) => ({ label, score: null })),
    };
  }
}

function requireLabels(labels: string[] | undefined): string[] {
  const clean = (labels ?? []).map((l) => l.trim());
  if (clean.length < 2) {
    throw invalidArgument('labels: give at least two labels (or name a classifier model)', [{
      field: 'labels',
      message: 'at least two labels',
    }]);
  }
  if (clean.some((l) => !l)) throw invalidArgument('labels: a label is empty', [{ field: 'labels', message: 'empty label' }]);
  if (new Set(clean).size !== clean.length) {
    throw invalidArgument('labels: a label is repeated', [{ field: 'labels', message: 'duplicate label' }]);
  }
  return clean;
}

function ranked(scores: Record<string, number>, multi: boolean) {
  const list = Object.entries(scores).map(([label, score]) => ({ label, score: Math.round(score * 1e4) / 1e4 })).sort((a, b) =>
    b.score - a.score
  );
  return { label: list[0]!.label, labels: multi ? list.filter((l) => l.score >= 0.5) : list };
}

function cosine(a: number[], b: number[]): number {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) (d += a[i]! * b[i]!), (na += a[i]! * a[i]!), (nb += b[i]! * b[i]!);
  return d / (Math.sqrt(na * nb) || 1);
}
