/**
 * Which files of a hub repository make up one model variant: the configs and tokenizer transformers.js
 * reads, plus the ONNX graph(s) for the dtype and their external-data chunks.
 */
import { ServiceError } from '../errors.ts';
import type { Dtype } from './spec.ts';

/** transformers.js' file suffix per dtype (DEFAULT_DTYPE_SUFFIX_MAPPING). */
export const DTYPE_SUFFIX: Record<Dtype, string> = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

export const REQUIRED_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'] as const;
export const OPTIONAL_FILES = [
  'generation_config.json',
  'special_tokens_map.json',
  'preprocessor_config.json',
  'chat_template.jinja',
  // vision-language models: the processor's settings (image tokens per image) and a template kept apart
  'processor_config.json',
  'chat_template.json',
  // sentence-transformers metadata: how an embedding model pools and normalises.
  'modules.json',
  'sentence_bert_config.json',
  'config_sentence_transformers.json',
  '1_Pooling/config.json',
] as const;

/** Order in which a dtype is picked when a hub reference names none: CPU-friendly first. */
export const DEFAULT_DTYPE_ORDER: readonly Dtype[] = ['q8', 'q4', 'fp32', 'int8', 'uint8', 'fp16', 'q4f16', 'bnb4'];

export const onnxPath = (component: string, dtype: Dtype) => `onnx/${component}${DTYPE_SUFFIX[dtype]}.onnx`;

/** A path from the hub is used on disk: refuse anything that could leave the model directory. */
export function isSafeRepoPath(p: string): boolean {
  if (!p || p.startsWith('/') || p.includes('\\') || p.includes('\0')) return false;
  return p.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

/** Files to fetch, in download order (small configs first); throws 404 when the repo lacks a needed file. */
export function selectFiles<T extends { rfilename: string }>(
  siblings: readonly T[],
  want: { repo: string; dtype: Dtype; components: readonly string[] },
): T[] {
  const byName = new Map(siblings.filter((s) => isSafeRepoPath(s.rfilename)).map((s) => [s.rfilename, s]));
  const picked: T[] = [];
  const missing: string[] = [];
  for (const f of REQUIRED_FILES) byName.has(f) ? picked.push(byName.get(f)!) : missing.push(f);
  for (const f of OPTIONAL_FILES) if (byName.has(f)) picked.push(byName.get(f)!);
  for (const c of want.components) {
    const graph = onnxPath(c, want.dtype);
    if (!byName.has(graph)) {
      missing.push(graph);
      continue;
    }
    picked.push(byName.get(graph)!);
    // External data: `<graph>_data`, `<graph>_data_1`, ... when the hub lists them.
    const chunk = new RegExp(`^${escapeRe(graph)}_data(_[0-9]+)?$`);
    picked.push(...[...byName.values()].filter((s) => chunk.test(s.rfilename)).sort((a, b) => a.rfilename.localeCompare(b.rfilename)));
  }
  if (missing.length) {
    throw new ServiceError(404, 'not_found', `model repository '${want.repo}' has no ${missing.join(', ')} (dtype ${want.dtype})`);
  }
  return picked;
}

/**
 * The ONNX graph components a repository provides: a single `model`, whisper-style encoder/decoder, or a
 * vision-language model's image encoder, token embeddings and decoder.
 */
export function detectComponents(names: readonly string[]): string[] {
  const has = (base: string) => names.some((n) => n.startsWith(`onnx/${base}`) && n.endsWith('.onnx'));
  if (names.some((n) => /^onnx\/model(_[a-z0-9]+)?\.onnx$/.test(n))) return ['model'];
  if (has('vision_encoder') && has('embed_tokens') && has('decoder_model_merged')) {
    return ['vision_encoder', 'embed_tokens', 'decoder_model_merged'];
  }
  if (has('encoder_model') && has('decoder_model_merged')) return ['encoder_model', 'decoder_model_merged'];
  return ['model'];
}

/** First dtype in DEFAULT_DTYPE_ORDER for which every component has a graph. */
export function pickDefaultDtype(names: readonly string[], components: readonly string[]): Dtype | undefined {
  const set = new Set(names);
  return DEFAULT_DTYPE_ORDER.find((d) => components.every((c) => set.has(onnxPath(c, d))));
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
