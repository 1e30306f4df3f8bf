/**
 * Training jobs and their use (docs/api/training.md), both under the job contract:
 *   POST /svc/v1/training/classifier  train a classifier head on embeddings; the result is a custom model
 *   POST /svc/v1/classify             label texts with such a model
 * Examples come as JSON `examples`, or as a CSV / JSONL / JSON file in any of the three input forms.
 */
import { readFile } from 'node:fs/promises';
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { readTaskInput } from '../../http/task-input.ts';
import { taskHandler } from '../../http/task-route.ts';
import { invalidRequest, readJson, validate } from '../../http/validate.ts';
import type { FileStore } from '../../services/files/file-store.ts';
import type { TaskRunner } from '../../services/jobs/task-runner.ts';
import { examplesFromFile, examplesFromJson } from '../../services/training/examples.ts';
import type { TrainClassifierInput, TrainingService } from '../../services/training/training-service.ts';

const MAX_EXAMPLES = 100_000;
const name = v.pipe(v.string(), v.minLength(1), v.maxLength(200));
const int = (lo: number, hi: number, dflt: number) => v.optional(v.pipe(v.number(), v.integer(), v.minValue(lo), v.maxValue(hi)), dflt);
const num = (lo: number, hi: number, dflt: number) => v.optional(v.pipe(v.number(), v.minValue(lo), v.maxValue(hi)), dflt);

const TrainOptions = v.strictObject({
  name,
  embedding_model: name,
  examples: v.optional(v.array(v.unknown())),
  text_column: v.optional(name, 'text'),
  label_column: v.optional(name, 'label'),
  file_format: v.optional(v.picklist(['csv', 'jsonl', 'json'])),
  head: v.optional(v.picklist(['logistic', 'mlp']), 'logistic'),
  epochs: int(1, 10_000, 100),
  learning_rate: num(1e-6, 10, 0.05),
  hidden: int(1, 4096, 64),
  batch_size: int(1, 65_536, 32),
  weight_decay: num(0, 1, 1e-4),
  test_split: num(0, 0.9, 0.2),
  seed: int(0, 2 ** 32 - 1, 42),
});

const ClassifyBody = v.strictObject({
  model: name,
  text: v.optional(v.string()),
  texts: v.optional(v.pipe(v.array(v.string()), v.minLength(1), v.maxLength(10_000))),
});

export function trainingRoutes(deps: { runner: TaskRunner; files: FileStore; training: TrainingService }) {
  const app = new Hono<AppEnv>();
  app.post(
    '/training/classifier',
    taskHandler<TrainClassifierInput>(deps.runner, {
      name: 'train-classifier',
      async input(c) {
        const ti = await readTaskInput(c, deps.files);
        try {
          const o = validate(TrainOptions, ti.options);
          const cols = { text: o.text_column, label: o.label_column };
          if ((o.examples ? 1 : 0) + ti.files.length !== 1) {
            throw invalidRequest('give the examples either as JSON "examples" or as one file (CSV, JSONL or JSON)', [{
              field: 'examples',
              message: 'exactly one source',
            }]);
          }
          const f = ti.files[0];
          const examples = o.examples
            ? examplesFromJson(o.examples, cols)
            : examplesFromFile(new Uint8Array(await readFile(f.path)), f.filename, cols, o.file_format);
          if (examples.length < 2 || examples.length > MAX_EXAMPLES) {
            throw invalidRequest(`between 2 and ${MAX_EXAMPLES} examples are needed (got ${examples.length})`, [{
              field: 'examples',
              message: 'count',
            }]);
          }
          await deps.training.assertCanStore(); // 503 before admission: nothing would be kept
          return {
            name: o.name,
            embeddingModel: o.embedding_model,
            examples,
            head: o.head,
            epochs: o.epochs,
            learningRate: o.learning_rate,
            hidden: o.hidden,
            batchSize: o.batch_size,
            weightDecay: o.weight_decay,
            testSplit: o.test_split,
            seed: o.seed,
          };
        } finally {
          await ti.cleanup(); // the examples are in memory now
        }
      },
      run: (input, ctx) => deps.training.trainClassifier(input, ctx),
    }),
  );
  app.post(
    '/classify',
    taskHandler<{ model: string; texts: string[] }>(deps.runner, {
      name: 'classify',
      async input(c) {
        const b = await readJson(c, ClassifyBody);
        if ((b.text === undefined) === (b.texts === undefined)) {
          throw invalidRequest('give either "text" or "texts"', [{ field: 'texts', message: 'exactly one of text, texts' }]);
        }
        return { model: b.model, texts: b.texts ?? [b.text!] };
      },
      run: (input, ctx) => deps.training.classify(input.model, input.texts, { signal: ctx.signal }),
    }),
  );
  return app;
}
