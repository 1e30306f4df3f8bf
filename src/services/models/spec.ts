/**
 * What the rest of the server needs to know about a model, whether it comes from the built-in catalog
 * or was imported from the hub: where its artifacts live and how to run them.
 */

/** transformers.js dtypes; each picks an ONNX file suffix (see files.ts). */
export const DTYPES = ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'] as const;
export type Dtype = (typeof DTYPES)[number];

/** `classifier`: a trained head over an embedding model (see classifier-model.ts). */
export type ModelKind = 'generation' | 'embedding' | 'reranker' | 'speech' | 'classifier';

/** The capability vocabulary of Ollama's `show`. */
export type Capability = 'completion' | 'tools' | 'vision' | 'embedding' | 'thinking';

export interface ModelDetails {
  family?: string;
  parameter_size?: string;
  quantization_level?: string;
}

export interface ModelSpec {
  /** Display name, e.g. `qwen3:0.6b` or `hf.co/owner/repo:q4`. */
  name: string;
  /** Hub repository `owner/repo`. */
  repo: string;
  /** Git revision to fetch; `main` when absent. */
  revision?: string;
  dtype: Dtype;
  kind: ModelKind;
  capabilities: Capability[];
  /** ONNX graph base names under `onnx/` (`model`; whisper: `encoder_model`, `decoder_model_merged`). */
  components: string[];
  details?: ModelDetails;
  /** Feature-extraction hints for embedding models. */
  embedding?: { pooling: 'mean' | 'cls'; normalize: boolean };
}

export interface CatalogEntry extends ModelSpec {
  /** Other names that resolve to this entry (`qwen3` → `qwen3:latest`). */
  aliases?: string[];
}

/** A model imported from the hub (or created/copied): served beside the catalog, marked Unverified. */
export interface CustomModelRecord extends ModelSpec {
  source: 'hub' | 'create' | 'copy';
  unverified: true;
  /** Hub host named in the reference (`hf.co`), for hub imports. */
  hub_host?: string;
  created_at: string;
  /** What `/api/create` set (and `/api/copy` carried over): applied by the inference routes, shown by show. */
  profile?: ModelProfile;
}

/** The Modelfile-style settings of a created model. */
export interface ModelProfile {
  /** The model it was created or copied from. */
  parent?: string;
  system?: string;
  /** A chat template (Jinja, as in tokenizer_config.json) replacing the model's own. */
  template?: string;
  /** Default request options (temperature, top_p, num_ctx, stop, ...). */
  parameters?: Record<string, unknown>;
  license?: string[];
  /** Digests of the files the model was created from (`files` and `adapters` of create). */
  layers?: { path: string; digest: string }[];
}

export const isDtype = (s: string): s is Dtype => (DTYPES as readonly string[]).includes(s);
