/**
 * Training jobs and their use, free of HTTP: a classifier head trained on the embeddings of a chosen
 * embedding model, evaluated on a stratified held-out split, and stored as a custom model; `classify`
 * runs such a model. Training waits (up to a configured time, ten minutes by default) while the engine
 * refuses for memory pressure, instead of failing. See docs/api/training.md.
 */
import { invalidArgument, isServiceError, ServiceError } from '../errors.ts';
import type { ChatService } from '../chat/chat-service.ts';
import type { TaskContext } from '../jobs/task.ts';
import type { ModelServices } from '../models/model-services.ts';
import { type Example, stratifiedSplit } from './examples.ts';
import { type HeadType, type HeadWeights, isHeadWeights, predictHead, trainHead } from './head.ts';
import { classificationMetrics } from './metrics.ts';

export interface TrainClassifierInput {
  /** Name of the classifier model to create. */
  name: string;
  embeddingModel: string;
  examples: Example[];
  head: HeadType;
  epochs: number;
  learningRate: number;
  hidden: number;
  batchSize: number;
  weightDecay: number;
  testSplit: number;
  seed: number;
}

const EMBED_BATCH = 32;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(t);
      reject(signal.reason);
    }
    signal.addEventListener('abort', abort, { once: true });
  });

/** The engine's refusal for memory pressure (503 with Retry-After), as opposed to any other 503. */
const isMemoryPressure = (e: unknown): e is ServiceError =>
  isServiceError(e) && e.status === 503 && e.reason === 'service_unavailable' && /memory/i.test(e.message);

export class TrainingService {
  readonly #chat: ChatService;
  readonly #models: ModelServices;
  readonly #memoryWaitMs: number;

  constructor(o: { chat: ChatService; models: ModelServices; memoryWaitSeconds: number }) {
    this.#chat = o.chat;
    this.#models = o.models;
    this.#memoryWaitMs = o.memoryWaitSeconds * 1000;
  }

  /** Throws 503 model_store_read_only when the trained model could not be stored (checked before any work). */
  assertCanStore(): Promise<void> {
    return this.#models.layout.assertWritable();
  }

  /** Runs `fn`, retrying after the engine's Retry-After while it refuses for memory pressure, until the wait limit. */
  async #withMemoryWait<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    const deadline = performance.now() + this.#memoryWaitMs;
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        const left = deadline - performance.now();
        if (!isMemoryPressure(e) || left <= 0) throw e;
        const retryAfter = Number(e.headers?.['Retry-After'] ?? 5) * 1000;
        await sleep(Math.min(retryAfter > 0 ? retryAfter : 5000, left), signal);
      }
    }
  }

  async #embed(model: string, texts: string[], signal: AbortSignal): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += EMBED_BATCH) {
      signal.throwIfAborted();
      const batch = texts.slice(i, i + EMBED_BATCH);
      const r = await this.#withMemoryWait(() => this.#chat.embed(model, batch, { signal }), signal);
      out.push(...r.vectors.map((v) => Float32Array.from(v)));
    }
    return out;
  }

  async trainClassifier(input: TrainClassifierInput, ctx: Pick<TaskContext, 'signal' | 'progress'>) {
    const { signal } = ctx;
    await this.assertCanStore();
    const embedding = await this.#chat.resolve(input.embeddingModel, 'embedding');
    const labels = [...new Set(input.examples.map((e) => e.label))].sort();
    if (labels.length < 2) {
      throw invalidArgument('training needs examples of at least two labels', [{ field: 'examples', message: 'one label only' }]);
    }
    const { train, test } = stratifiedSplit(input.examples, input.testSplit, input.seed);
    const index = new Map(labels.map((l, i) => [l, i]));
    ctx.progress(0, input.epochs);

    const trainX = await this.#embed(embedding.name, train.map((e) => e.text), signal);
    const testX = await this.#embed(embedding.name, test.map((e) => e.text), signal);
    let finalLoss = Number.NaN;
    const head = await trainHead(trainX, train.map((e) => index.get(e.label)!), labels.length, {
      type: input.head,
      epochs: input.epochs,
      learningRate: input.learningRate,
      batchSize: input.batchSize,
      hidden: input.hidden,
      weightDecay: input.weightDecay,
      seed: input.seed,
      signal,
      onEpoch: (epoch, loss) => {
        finalLoss = loss;
        ctx.progress(epoch, input.epochs);
      },
    });
    const predict = (xs: Float32Array[]) => xs.map((x) => argmax(predictHead(head, x)));
    const trainMetrics = classificationMetrics(labels, train.map((e) => index.get(e.label)!), predict(trainX));
    const heldOut = test.length ? classificationMetrics(labels, test.map((e) => index.get(e.label)!), predict(testX)) : null;

    signal.throwIfAborted();
    const metrics = {
      held_out: heldOut,
      training: { accuracy: trainMetrics.accuracy, macro_f1: trainMetrics.macro_f1, final_loss: finalLoss },
    };
    const record = await this.#models.installClassifier(input.name, {
      format: 'svc-classifier',
      version: 1,
      embedding_model: embedding.name,
      labels,
      head,
      metrics,
      trained_at: new Date().toISOString(),
    });
    return {
      model: record.name,
      embedding_model: embedding.name,
      labels,
      head: { type: input.head, ...(input.head === 'mlp' ? { hidden: input.hidden } : {}), input_dims: head.inputDims },
      examples: { total: input.examples.length, train: train.length, held_out: test.length },
      epochs: input.epochs,
      metrics,
    };
  }

  /** Labels `texts` with a classifier model: the best label, its probability, and every label's probability. */
  async classify(model: string, texts: string[], o: { signal?: AbortSignal } = {}) {
    const { name, file } = await this.#models.readClassifier(model);
    const head = file.head as HeadWeights;
    if (!isHeadWeights(head) || head.classes !== file.labels.length) {
      throw new ServiceError(500, 'model_corrupt', `classifier '${name}' has a damaged head`);
    }
    const r = await this.#chat.embed(file.embedding_model, texts, { signal: o.signal });
    if (r.vectors[0] && r.vectors[0].length !== head.inputDims) {
      throw new ServiceError(
        409,
        'model_mismatch',
        `classifier '${name}' expects ${head.inputDims}-dimensional embeddings; '${file.embedding_model}' now gives ${r.vectors[0].length}`,
      );
    }
    const results = r.vectors.map((v) => {
      const p = predictHead(head, v);
      const best = argmax(p);
      return { label: file.labels[best], score: p[best], scores: Object.fromEntries(file.labels.map((l, i) => [l, p[i]])) };
    });
    return { model: name, embedding_model: file.embedding_model, results };
  }
}

function argmax(v: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
  return best;
}
