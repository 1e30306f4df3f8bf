/**
 * The built-in catalog: Ollama-style friendly names mapped to public ONNX repositories on the hub.
 * Entries are listed whether downloaded or not; tests register tiny fixture models at runtime.
 */
import { invalidArgument } from '../errors.ts';
import { nameKey } from './names.ts';
import { type CatalogEntry, isDtype } from './spec.ts';

const LLM = ['model'];
/** Vision-language models: image encoder, token embeddings and the decoder fed with both. */
const VLM = ['vision_encoder', 'embed_tokens', 'decoder_model_merged'];

/** A Whisper speech model: the timestamped ONNX export (encoder and merged decoder), q8. */
const whisper = (name: string, repo: string, parameter_size: string, aliases: string[] = []): CatalogEntry => ({
  name,
  aliases,
  repo,
  dtype: 'q8',
  kind: 'speech',
  capabilities: [],
  components: ['encoder_model', 'decoder_model_merged'],
  details: { family: 'whisper', parameter_size, quantization_level: 'Q8_0' },
});

export const BUILTIN_CATALOG: readonly CatalogEntry[] = Object.freeze(
  [
    {
      name: 'qwen2.5:0.5b',
      aliases: ['qwen2.5:latest', 'qwen2.5:0.5b-instruct'],
      repo: 'onnx-community/Qwen2.5-0.5B-Instruct',
      dtype: 'q4',
      kind: 'generation',
      capabilities: ['completion', 'tools'],
      components: LLM,
      details: { family: 'qwen2', parameter_size: '494M', quantization_level: 'Q4' },
    },
    {
      // fp16 activations: the variant meant for WebGPU.
      name: 'qwen2.5:0.5b-q4f16',
      aliases: ['qwen2.5:0.5b-instruct-q4f16'],
      repo: 'onnx-community/Qwen2.5-0.5B-Instruct',
      dtype: 'q4f16',
      kind: 'generation',
      capabilities: ['completion', 'tools'],
      components: LLM,
      details: { family: 'qwen2', parameter_size: '494M', quantization_level: 'Q4F16' },
    },
    {
      name: 'qwen3:0.6b',
      aliases: ['qwen3:latest'],
      repo: 'onnx-community/Qwen3-0.6B-ONNX',
      dtype: 'q4',
      kind: 'generation',
      capabilities: ['completion', 'tools', 'thinking'],
      components: LLM,
      details: { family: 'qwen3', parameter_size: '596M', quantization_level: 'Q4' },
    },
    {
      name: 'smollm2:360m',
      aliases: ['smollm2:latest'],
      repo: 'HuggingFaceTB/SmolLM2-360M-Instruct',
      dtype: 'q4',
      kind: 'generation',
      capabilities: ['completion'],
      components: LLM,
      details: { family: 'llama', parameter_size: '362M', quantization_level: 'Q4' },
    },
    {
      // Vision: Idefics3 architecture (SigLIP encoder + SmolLM2 decoder); images go through its own processor.
      name: 'smolvlm:256m',
      aliases: ['smolvlm:latest', 'smolvlm:256m-instruct'],
      repo: 'HuggingFaceTB/SmolVLM-256M-Instruct',
      dtype: 'q8',
      kind: 'generation',
      capabilities: ['completion', 'vision'],
      components: VLM,
      details: { family: 'idefics3', parameter_size: '256M', quantization_level: 'Q8_0' },
    },
    {
      name: 'all-minilm:l6',
      aliases: ['all-minilm:latest', 'all-minilm:22m', 'all-minilm:l6-v2'],
      repo: 'Xenova/all-MiniLM-L6-v2',
      dtype: 'q8',
      kind: 'embedding',
      capabilities: ['embedding'],
      components: LLM,
      embedding: { pooling: 'mean', normalize: true },
      details: { family: 'bert', parameter_size: '23M', quantization_level: 'Q8_0' },
    },
    {
      name: 'nomic-embed-text:v1',
      aliases: ['nomic-embed-text:latest'],
      repo: 'Xenova/nomic-embed-text-v1',
      dtype: 'q8',
      kind: 'embedding',
      capabilities: ['embedding'],
      components: LLM,
      embedding: { pooling: 'mean', normalize: true },
      details: { family: 'nomic-bert', parameter_size: '137M', quantization_level: 'Q8_0' },
    },
    {
      // Cross-encoder: scores (query, passage) pairs; none of show's capabilities apply.
      name: 'ms-marco-minilm:l6',
      aliases: ['ms-marco-minilm:latest'],
      repo: 'Xenova/ms-marco-MiniLM-L-6-v2',
      dtype: 'q8',
      kind: 'reranker',
      capabilities: [],
      components: LLM,
      details: { family: 'bert', parameter_size: '23M', quantization_level: 'Q8_0' },
    },
    whisper('whisper:tiny', 'onnx-community/whisper-tiny_timestamped', '39M', ['whisper:latest']),
    // English-only: no language or task tokens, so no translation.
    whisper('whisper:tiny.en', 'onnx-community/whisper-tiny.en_timestamped', '39M'),
    whisper('whisper:base', 'onnx-community/whisper-base_timestamped', '74M'),
    whisper('whisper:base.en', 'onnx-community/whisper-base.en_timestamped', '74M'),
    // Multilingual and markedly better at languages other than English than tiny/base.
    whisper('whisper:small', 'onnx-community/whisper-small_timestamped', '244M'),
  ] satisfies CatalogEntry[],
);

const REPO = /^[A-Za-z0-9][A-Za-z0-9_.-]*\/[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export class Catalog {
  readonly #entries = new Map<string, CatalogEntry>();
  readonly #byKey = new Map<string, CatalogEntry>();

  constructor(entries: readonly CatalogEntry[] = BUILTIN_CATALOG) {
    for (const e of entries) this.register(e);
  }

  /** Adds (or replaces) an entry; tests use this for the fixture models. */
  register(entry: CatalogEntry): CatalogEntry {
    if (!REPO.test(entry.repo) || entry.repo.includes('..')) throw invalidArgument(`invalid hub repository '${entry.repo}'`);
    if (!isDtype(entry.dtype)) throw invalidArgument(`invalid dtype '${entry.dtype}'`);
    const key = nameKey(entry.name);
    this.unregister(key);
    const frozen = Object.freeze({ ...entry });
    this.#entries.set(key, frozen);
    for (const n of [entry.name, ...(entry.aliases ?? [])]) this.#byKey.set(nameKey(n), frozen);
    return frozen;
  }

  unregister(name: string): boolean {
    const key = nameKey(name);
    const e = this.#entries.get(key);
    if (!e) return false;
    this.#entries.delete(key);
    for (const [k, v] of this.#byKey) if (v === e) this.#byKey.delete(k);
    return true;
  }

  /** Resolves a name or alias (`qwen3` → `qwen3:latest` → `qwen3:0.6b`); undefined when unknown. */
  resolve(name: string): CatalogEntry | undefined {
    return this.#byKey.get(nameKey(name));
  }

  list(): CatalogEntry[] {
    return [...this.#entries.values()];
  }
}
