/**
 * Load a local hub-layout model directory into ONNX sessions on the first device that works.
 * No network: transformers.js only ever reads the directory (downloads are the models service's job).
 */
import type { PreTrainedModel, PreTrainedTokenizer } from '@huggingface/transformers';
import { join, resolve } from 'node:path';
import { ServiceError } from '../errors.ts';
import {
  type BackendSetting,
  type Device,
  firstLine,
  initBackend,
  type OrtPackage,
  sessionPlacement,
  type Transformers,
} from './backend.ts';
import { availableDtypes, type Dtype, modelSizeBytes, type PoolingConfig, readJson, readPooling } from './model-files.ts';
import { DECODER_OPTION, decoderShape } from './decoder-graph.ts';
import { localFilesOnly } from './local-files.ts';

export type Task = 'text-generation' | 'feature-extraction' | 'text-classification' | 'automatic-speech-recognition';

export interface LoadOptions {
  backend?: BackendSetting;
  /** Default: fp32 when present, else the first quantised file found. */
  dtype?: Dtype;
  threads?: number;
  wasmPaths?: string;
}

export interface LoadedModel {
  dir: string;
  task: Task;
  dtype: Dtype;
  /** Device the sessions run on, the runtime package, and what was tried before it. */
  device: Device;
  ort: OrtPackage;
  fallbacks: { device: Device; error: string }[];
  notes: string[];
  sizeBytes: number;
  loadNs: number;
  config: Record<string, unknown>;
  tokenizer: PreTrainedTokenizer;
  model: PreTrainedModel;
  /** The transformers.js module bound to this model's runtime (Tensor constructors etc.). */
  tf: Transformers;
  /** A vision-language model: `processor` turns the prompt and images into its inputs. */
  vision?: boolean;
  /** Set for speech models: the feature extractor (log-mel spectrogram); for vision models, the image processor. */
  processor?: import('@huggingface/transformers').Processor;
  /** Set for feature-extraction models. */
  pooling?: PoolingConfig;
  /** Largest sequence the model accepts (position embeddings / tokenizer limit). */
  maxTokens: number;
  dispose(): Promise<void>;
}

/** The model's files are there but no runtime could open them (corrupt, truncated, an unsupported operator). */
export const modelLoadFailed = (message: string) => new ServiceError(500, 'model_load_failed', message);

const AUTO_CLASS = {
  'text-generation': 'AutoModelForCausalLM',
  'feature-extraction': 'AutoModel',
  'text-classification': 'AutoModelForSequenceClassification',
  'automatic-speech-recognition': 'AutoModelForSpeechSeq2Seq',
} as const;

/** ONNX graph whose presence names the dtypes a model has: speech models split into encoder and decoder. */
const MAIN_GRAPH: Record<Task, string> = {
  'text-generation': 'model',
  'feature-extraction': 'model',
  'text-classification': 'model',
  'automatic-speech-recognition': 'encoder_model',
};

/** Vision-language models (a `vision_config`): image encoder, token embeddings, and a decoder fed with both. */
const VISION_GRAPHS = ['vision_encoder', 'embed_tokens', 'decoder_model_merged'];

export async function loadModel(dirIn: string, task: Task, opts: LoadOptions = {}): Promise<LoadedModel> {
  const t0 = performance.now();
  const dir = resolve(dirIn);
  const rt = await initBackend(opts.backend ?? 'auto', { threads: opts.threads, wasmPaths: opts.wasmPaths });
  localFilesOnly(rt.tf.env);
  const config = (await readJson(join(dir, 'config.json'))) ?? {};
  const vision = task === 'text-generation' && !!config.vision_config;
  const present = await availableDtypes(dir, vision ? 'decoder_model_merged' : MAIN_GRAPH[task]);
  const dtype = opts.dtype ?? present[0];
  if (!dtype || !present.includes(dtype)) {
    throw modelLoadFailed(`no onnx/model file for dtype ${opts.dtype ?? '(any)'} in ${dir} (have: ${present.join(', ') || 'none'})`);
  }
  const tokenizer = await rt.tf.AutoTokenizer.from_pretrained(dir);
  const decoder = task === 'text-generation' ? decoderShape(config) : undefined;
  const fallbacks: { device: Device; error: string }[] = [];
  let model: PreTrainedModel | undefined;
  let device: Device | undefined;
  for (const d of rt.devices) {
    try {
      const auto = vision ? rt.tf.AutoModelForImageTextToText : rt.tf[AUTO_CLASS[task]];
      const placement = sessionPlacement(rt, d);
      // a decoder's graph is rewritten where its session is created (./decoder-graph.ts)
      if (decoder) placement.session_options = { ...placement.session_options, [DECODER_OPTION]: decoder };
      model = (await auto.from_pretrained(dir, { dtype, ...placement } as never)) as PreTrainedModel;
      device = d;
      break;
    } catch (e) {
      fallbacks.push({ device: d, error: firstLine(e) });
    }
  }
  if (!model || !device) throw modelLoadFailed(`could not load ${dir}: ${fallbacks.map((f) => `${f.device}: ${f.error}`).join('; ')}`);
  const notes = [...rt.notes, ...fallbacks.map((f) => `${f.device} failed (${f.error}); fell back`)];
  const tokMax = Number((tokenizer as unknown as { model_max_length?: number }).model_max_length);
  const posMax = Number(
    config.max_position_embeddings ?? (config.text_config as { max_position_embeddings?: number } | undefined)?.max_position_embeddings,
  );
  const maxTokens = Math.min(...[tokMax, posMax].filter((n) => Number.isFinite(n) && n > 0), 1 << 20);
  const m = model;
  return {
    dir,
    task,
    dtype,
    device,
    ort: rt.ort,
    fallbacks,
    notes,
    sizeBytes: task === 'automatic-speech-recognition'
      ? (await modelSizeBytes(dir, dtype, 'encoder_model')) + (await modelSizeBytes(dir, dtype, 'decoder_model_merged'))
      : vision
      ? (await Promise.all(VISION_GRAPHS.map((g) => modelSizeBytes(dir, dtype, g)))).reduce((a, b) => a + b, 0)
      : await modelSizeBytes(dir, dtype),
    loadNs: Math.round((performance.now() - t0) * 1e6),
    config,
    tokenizer,
    model: m,
    tf: rt.tf,
    pooling: task === 'feature-extraction' ? await readPooling(dir) : undefined,
    processor: task === 'automatic-speech-recognition' || vision ? await rt.tf.AutoProcessor.from_pretrained(dir) : undefined,
    vision,
    maxTokens,
    dispose: () => m.dispose().then(() => undefined),
  };
}
