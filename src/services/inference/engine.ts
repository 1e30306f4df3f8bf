/**
 * The inference service's front: residency + slots + the task functions, so a caller (route, job, agent)
 * names a model and gets a result without handling leases. Knows nothing of HTTP.
 */
import {
  countPromptTokens,
  type GenerateOptions,
  generateText,
  type GenerationInput,
  type PreparedPrompt,
  renderPrompt,
  type TextGeneration,
} from './generate.ts';
import type { LoadedModel } from './load.ts';
import { type EmbedOptions, type EmbedResult, embedTexts } from './embed.ts';
import { type PairScore, scorePairs } from './rerank.ts';
import { createResidency, defaultLoader, type Loader, type ModelSpec, type ResidencySettings } from './residency.ts';
import { parseKeepAlive } from './keep-alive.ts';
import { tokenizeOffLoop } from './tokenize-off-loop.ts';
import { checkPromptChars, textChars } from '../limits.ts';
import { invalidArgument } from '../errors.ts';
import type { BackendSetting } from './backend.ts';

export interface EngineSettings extends ResidencySettings {
  backend: BackendSetting;
  threads: number;
  wasmPaths?: string;
}

export interface RequestOptions {
  /** Ollama keep_alive forms; undefined = the server default. */
  keepAlive?: unknown;
  signal?: AbortSignal;
}

export function createInferenceEngine(settings: EngineSettings, loader?: Loader) {
  const residency = createResidency(
    settings,
    loader ?? defaultLoader({ backend: settings.backend, threads: settings.threads, wasmPaths: settings.wasmPaths }),
  );
  const keepAliveMs = (v: unknown) => (v === undefined ? undefined : parseKeepAlive(v, settings.keepAliveSeconds));

  return {
    residency,

    /**
     * Stream a generation. The slot is held until the stream ends, and freed at once on abort (the session
     * step in flight is discarded) or when the consumer stops reading.
     */
    async generate(spec: ModelSpec, input: GenerationInput, o: GenerateOptions & RequestOptions = {}): Promise<TextGeneration> {
      checkPromptChars(textChars(input)); // before loading or tokenizing anything
      const lease = await residency.acquire(spec, { keepAliveMs: keepAliveMs(o.keepAlive), signal: o.signal });
      try {
        const gen = generateText(lease.model, input, o, lease.loadNs, await prepareLarge(lease.model, input, o.signal));
        const release = () => {
          o.signal?.removeEventListener('abort', release);
          lease.release();
        };
        o.signal?.addEventListener('abort', release, { once: true });
        gen.result.then(release, release);
        return gen;
      } catch (e) {
        lease.release();
        throw e;
      }
    },

    /** Tokens the prompt of `input` takes on this model (loads the model; generates nothing). */
    async countTokens(spec: ModelSpec, input: GenerationInput, o: RequestOptions = {}): Promise<number> {
      checkPromptChars(textChars(input));
      const lease = await residency.acquire(spec, { keepAliveMs: keepAliveMs(o.keepAlive), signal: o.signal });
      try {
        const p = await prepareLarge(lease.model, input, o.signal);
        return p.vision?.input_ids.dims[1] ?? p.ids?.length ?? countPromptTokens(lease.model, input);
      } finally {
        lease.release();
      }
    },

    async embed(spec: ModelSpec, texts: string[], o: EmbedOptions & RequestOptions = {}): Promise<EmbedResult & { loadNs: number }> {
      checkPromptChars(textChars(texts));
      const lease = await residency.acquire(spec, { keepAliveMs: keepAliveMs(o.keepAlive), signal: o.signal });
      try {
        return { ...(await embedTexts(lease.model, texts, o)), loadNs: lease.loadNs };
      } finally {
        lease.release();
      }
    },

    async rerank(spec: ModelSpec, query: string, documents: string[], o: RequestOptions = {}): Promise<PairScore[]> {
      const lease = await residency.acquire(spec, { keepAliveMs: keepAliveMs(o.keepAlive), signal: o.signal });
      try {
        return await scorePairs(lease.model, query, documents);
      } finally {
        lease.release();
      }
    },

    /** Empty chat / generate: preload, or unload with keep_alive 0. */
    preload: (spec: ModelSpec, keepAlive?: unknown) => residency.preload(spec, keepAliveMs(keepAlive)),
    unload: (name: string) => residency.unload(name),
    list: () => residency.list(),
    releaseDeviceMemory: () => residency.releaseDeviceMemory(),
    close: () => residency.close(),
  };
}

export type InferenceEngine = ReturnType<typeof createInferenceEngine>;

/**
 * The prompt rendered once; a large one is also tokenized, in the worker pool. With images, the model's
 * processor resizes and normalises them and expands each image placeholder into the image's tokens.
 */
async function prepareLarge(m: LoadedModel, input: GenerationInput, signal?: AbortSignal): Promise<PreparedPrompt> {
  const { prompt, addSpecialTokens } = renderPrompt(m, input);
  const images = 'messages' in input ? input.images ?? [] : [];
  if (images.length) {
    if (!m.vision || !m.processor) throw invalidArgument('this model does not take images (no vision capability)');
    const raw = images.map((i) => new m.tf.RawImage(i.data, i.width, i.height, 4).rgb());
    // Idefics3 / SmolVLM (and most vision processors): (text, images)
    const vision = await (m.processor as unknown as (t: string, i: unknown[]) => Promise<PreparedPrompt['vision']>)(prompt, raw);
    return { prompt, addSpecialTokens, vision };
  }
  const ids = (await tokenizeOffLoop(m, [prompt], addSpecialTokens, signal))?.[0];
  return { prompt, addSpecialTokens, ids };
}
