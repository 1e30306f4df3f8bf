/**
 * Generation parameters in one neutral shape, and the mappings into it: Ollama's `options` (request and
 * Modelfile-style `parameters` of a custom model) and the model's own generation_config.json.
 * Precedence, later wins: generation_config < custom model parameters < request.
 */
import { invalidArgument } from '../errors.ts';

export interface GenerationParams {
  /** 0 = greedy. */
  temperature?: number;
  topP?: number;
  /** 0 = off. */
  topK?: number;
  seed?: number;
  stop?: string[];
  /** Most new tokens; undefined = what the context leaves. */
  maxTokens?: number;
  /** Requested context window (num_ctx). */
  contextTokens?: number;
  repetitionPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
}

/** Ollama option names that map onto GenerationParams; every other known option is accepted and ignored. */
const NUMERIC: Record<string, keyof GenerationParams> = {
  temperature: 'temperature',
  top_p: 'topP',
  top_k: 'topK',
  seed: 'seed',
  num_predict: 'maxTokens',
  num_ctx: 'contextTokens',
  repeat_penalty: 'repetitionPenalty',
  presence_penalty: 'presencePenalty',
  frequency_penalty: 'frequencyPenalty',
};

/** Ollama `options` (or a custom model's `parameters`) → GenerationParams; wrong types are 400 naming the option. */
export function fromOllamaOptions(options: Record<string, unknown> | undefined, where = 'options'): GenerationParams {
  const out: GenerationParams = {};
  for (const [k, raw] of Object.entries(options ?? {})) {
    if (raw === null || raw === undefined) continue;
    const key = NUMERIC[k];
    if (key) {
      const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
      if (typeof n !== 'number' || !Number.isFinite(n)) {
        throw invalidArgument(`${where}.${k} must be a number`, [{ field: `${where}.${k}`, message: 'must be a number' }]);
      }
      if (key === 'maxTokens') {
        if (n >= 0) out.maxTokens = Math.floor(n); // -1 infinite, -2 fill the context: both = what the context leaves
      } else if (key === 'topK' || key === 'contextTokens' || key === 'seed') out[key] = Math.floor(n);
      else (out as Record<string, number>)[key] = n;
    } else if (k === 'stop') {
      const list = Array.isArray(raw) ? raw : [raw];
      if (!list.every((s) => typeof s === 'string')) {
        throw invalidArgument(`${where}.stop must be a string or an array of strings`, [{
          field: `${where}.stop`,
          message: 'must be strings',
        }]);
      }
      out.stop = (list as string[]).filter(Boolean);
    }
  }
  return out;
}

/** Sampling defaults a model ships in generation_config.json (what transformers would use). */
export function fromGenerationConfig(g: Record<string, unknown> | undefined): GenerationParams {
  if (!g) return {};
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const out: GenerationParams = {};
  if (g.do_sample === false) out.temperature = 0;
  else if (num(g.temperature) !== undefined) out.temperature = num(g.temperature);
  if (num(g.top_p) !== undefined) out.topP = num(g.top_p);
  if (num(g.top_k) !== undefined) out.topK = num(g.top_k);
  if (num(g.repetition_penalty) !== undefined) out.repetitionPenalty = num(g.repetition_penalty);
  return out;
}

/** Later layers override earlier ones field by field; `undefined` never overrides. */
export function mergeParams(...layers: (GenerationParams | undefined)[]): GenerationParams {
  const out: GenerationParams = {};
  for (const l of layers) {
    for (const [k, v] of Object.entries(l ?? {})) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}
