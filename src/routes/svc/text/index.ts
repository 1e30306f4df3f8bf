/**
 * Text task routes (docs/api/text.md): summarize, translate, rewrite, correct, detect-language,
 * sentiment, categorize, keywords, entities, pii, extract. Each takes JSON `text` or one document and
 * honours the job contract.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { invalidRequest } from '../../../http/validate.ts';
import { grammarOf } from '../../../services/inference/structured/index.ts';
import { requireLanguage } from '../../../services/text/language.ts';
import { PII_TYPES, type PiiType } from '../../../services/text/pii.ts';
import type { TaskContext } from '../../../services/jobs/task.ts';
import type { TextService } from '../../../services/text/text-service.ts';
import { int, oneOf } from '../task-options.ts';
import { type TextRouteDeps, textTask } from './text-task.ts';

const str = v.pipe(v.string(), v.trim(), v.minLength(1));
const model = v.optional(str);
const chunkTokens = v.optional(int(16, 100_000), 1500);

const Summarize = v.object({
  model,
  length: oneOf(['short', 'medium', 'long'] as const, 'medium'),
  format: oneOf(['prose', 'bullets'] as const, 'prose'),
  style: v.optional(str),
  language: v.optional(str),
  chunk_tokens: chunkTokens,
});
const Translate = v.object({ model, target_language: str, source_language: v.optional(str) });
const Rewrite = v.object({
  model,
  tone: v.optional(str),
  audience: v.optional(str),
  length: oneOf(['shorter', 'same', 'longer'] as const, 'same'),
  instructions: v.optional(str),
  chunk_tokens: chunkTokens,
});
const Correct = v.object({ model, chunk_tokens: chunkTokens });
const Plain = v.object({});
const Sentiment = v.object({ model });
const Categorize = v.object({ model, labels: v.optional(v.array(v.string())), multi_label: v.optional(v.boolean(), false) });
const Keywords = v.object({ limit: v.optional(int(1, 1000), 10), max_words: v.optional(int(1, 10), 4) });
const Entities = v.object({
  types: v.optional(v.array(v.picklist(['PERSON', 'ORGANIZATION', 'LOCATION', 'DATE', 'MONEY', 'PERCENT', 'EMAIL', 'URL', 'PHONE']))),
});
const Pii = v.object({
  redact: v.optional(v.boolean(), false),
  redaction: oneOf(['type', 'mask'] as const, 'type'),
  types: v.optional(v.array(v.picklist(PII_TYPES as PiiType[]))),
});
const Extract = v.object({ model, schema: v.record(v.string(), v.unknown()), instructions: v.optional(str) });

export function textRoutes(deps: TextRouteDeps & { text: TextService }) {
  const app = new Hono<AppEnv>();
  const svc = deps.text;
  /** How a model task runs: the model asked for, the job's signal, and progress reported to the job. */
  const modelRun = (o: { model?: string }, ctx: TaskContext) => ({
    model: o.model,
    signal: ctx.signal,
    progress: (done: number, total: number) => ctx.progress(done, total),
  });
  /** Offsets point into the text worked on: for a document, its Markdown is returned with them. */
  const withText = (text: string, source: { format: string }) => (source.format === 'text' ? {} : { text });

  app.post(
    '/summarize',
    textTask(deps, {
      name: 'summarize',
      options: Summarize,
      run: async (text, o, ctx, source) => ({
        ...(await svc.summarize(text, {
          length: o.length,
          format: o.format,
          style: o.style,
          language: o.language,
          chunkTokens: o.chunk_tokens,
        }, modelRun(o, ctx))),
        length: o.length,
        format: o.format,
        source,
      }),
    }),
  );
  app.post(
    '/translate',
    textTask(deps, {
      name: 'translate',
      options: Translate,
      check: (o) => {
        requireLanguage(o.target_language, 'target_language');
        if (o.source_language) requireLanguage(o.source_language, 'source_language');
      },
      run: async (text, o, ctx, source) => ({
        ...(await svc.translate(text, { target: o.target_language, source: o.source_language }, modelRun(o, ctx))),
        source,
      }),
    }),
  );
  app.post(
    '/rewrite',
    textTask(deps, {
      name: 'rewrite',
      options: Rewrite,
      run: async (text, o, ctx, source) => ({
        ...(await svc.rewrite(text, {
          tone: o.tone,
          audience: o.audience,
          length: o.length,
          instructions: o.instructions,
          chunkTokens: o.chunk_tokens,
        }, modelRun(o, ctx))),
        source,
      }),
    }),
  );
  app.post(
    '/correct',
    textTask(deps, {
      name: 'correct',
      options: Correct,
      run: async (text, o, ctx, source) => ({
        ...(await svc.correct(text, { chunkTokens: o.chunk_tokens }, modelRun(o, ctx))),
        ...withText(text, source),
        source,
      }),
    }),
  );
  app.post(
    '/detect-language',
    textTask(deps, {
      name: 'detect-language',
      options: Plain,
      run: async (text, _o, ctx, source) => {
        const r = await svc.detectLanguage(text, ctx.signal);
        ctx.progress(1, 1);
        return { ...r, source };
      },
    }),
  );
  app.post(
    '/sentiment',
    textTask(deps, {
      name: 'sentiment',
      options: Sentiment,
      run: async (text, o, ctx, source) => ({
        ...(await svc.sentiment(text, modelRun(o, ctx))),
        ...withText(text, source),
        source,
      }),
    }),
  );
  app.post(
    '/categorize',
    textTask(deps, {
      name: 'categorize',
      options: Categorize,
      run: async (text, o, ctx, source) => {
        if (o.labels !== undefined && !Array.isArray(o.labels)) {
          throw invalidRequest('labels must be an array of strings', [{ field: 'labels', message: 'expected an array' }]);
        }
        return {
          ...(await svc.categorize(text, { labels: o.labels, multiLabel: o.multi_label }, modelRun(o, ctx))),
          source,
        };
      },
    }),
  );
  app.post(
    '/keywords',
    textTask(deps, {
      name: 'keywords',
      options: Keywords,
      run: async (text, o, ctx, source) => ({
        ...(await svc.keywords(text, { limit: o.limit, maxWords: o.max_words }, ctx.signal)),
        ...withText(text, source),
        source,
      }),
    }),
  );
  app.post(
    '/entities',
    textTask(deps, {
      name: 'entities',
      options: Entities,
      run: async (text, o, ctx, source) => ({
        ...(await svc.entities(text, { types: o.types }, ctx.signal)),
        ...withText(text, source),
        source,
      }),
    }),
  );
  app.post(
    '/pii',
    textTask(deps, {
      name: 'pii',
      options: Pii,
      run: async (text, o, ctx, source) => ({
        ...(await svc.pii(text, { types: o.types, redact: o.redact, redactMode: o.redaction }, ctx.signal)),
        ...withText(text, source),
        source,
      }),
    }),
  );
  app.post(
    '/extract',
    textTask(deps, {
      name: 'extract',
      options: Extract,
      check: (o) => {
        grammarOf({ type: 'json_schema', schema: o.schema });
      },
      run: async (text, o, ctx, source) => ({
        ...(await svc.extract(text, { schema: o.schema, instructions: o.instructions }, modelRun(o, ctx))),
        source,
      }),
    }),
  );
  return app;
}
