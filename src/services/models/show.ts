/**
 * What `/api/show` tells about a model: details, architecture metadata read from its config.json,
 * capabilities derived from the model itself (its chat template and architecture), and the Modelfile-style
 * fields (`modelfile`, `parameters`, `template`, `system`, `license`) for wire compatibility.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Catalog } from './catalog.ts';
import type { ModelStoreLayout } from './layout.ts';
import { readLocalCopy } from './manifest.ts';
import type { ModelRegistryStore } from './registry-store.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import type { Capability, CustomModelRecord, ModelKind, ModelSpec } from './spec.ts';

export interface ShowContext {
  catalog: Catalog;
  registry: ModelRegistryStore;
  layout: ModelStoreLayout;
}

export interface ShownModel {
  name: string;
  spec: ModelSpec;
  unverified: boolean;
  source: 'catalog' | 'hub' | 'create' | 'copy';
  local: boolean;
  modified_at?: Date;
  details: { parent_model: string; format: 'onnx'; family: string; families: string[]; parameter_size: string; quantization_level: string };
  model_info: Record<string, unknown>;
  capabilities: Capability[];
  template: string;
  system: string;
  parameters: string;
  license: string;
  modelfile: string;
}

/** Capabilities from the architecture (kind, config.json) and the chat template. */
export function deriveCapabilities(
  kind: ModelKind,
  // deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
  config: Record<string, any> | undefined,
  template: string,
  declared: Capability[] = [],
): Capability[] {
  const caps = new Set<Capability>();
  if (kind === 'embedding') caps.add('embedding');
  if (kind === 'generation') {
    caps.add('completion');
    if (/\btools\b/.test(template)) caps.add('tools');
    if (/enable_thinking|<think>/.test(template)) caps.add('thinking');
    if (config?.vision_config || declared.includes('vision')) caps.add('vision');
  }
  const order: Capability[] = ['completion', 'tools', 'vision', 'embedding', 'thinking'];
  return order.filter((c) => caps.has(c));
}

// deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
export async function readJsonFile(file: string): Promise<Record<string, any> | undefined> {
  try {
    const v = JSON.parse(await readFile(file, 'utf8'));
    return v && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The model's own chat template: chat_template.jinja, else tokenizer_config.json's, else chat_template.json's. */
export async function ownChatTemplate(dir: string): Promise<string> {
  const jinja = await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => '');
  if (jinja) return jinja;
  const t = (await readJsonFile(join(dir, 'tokenizer_config.json')))?.chat_template;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return (t.find((x: { name?: string }) => x.name === 'default') ?? t[0])?.template ?? '';
  // vision-language repositories keep the processor's template in chat_template.json
  const p = (await readJsonFile(join(dir, 'chat_template.json')))?.chat_template;
  return typeof p === 'string' ? p : '';
}

/** Ollama-style `model_info` keys (`general.architecture`, `<arch>.context_length`, ...) from config.json. */
// deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
export function modelInfo(config: Record<string, any>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const arch = String(config.model_type ?? 'unknown');
  const info: Record<string, unknown> = { 'general.architecture': arch };
  if (Array.isArray(config.architectures)) info['general.architectures'] = config.architectures;
  Object.assign(info, extra);
  const map: [string, string][] = [
    ['max_position_embeddings', 'context_length'],
    ['hidden_size', 'embedding_length'],
    ['num_hidden_layers', 'block_count'],
    ['intermediate_size', 'feed_forward_length'],
    ['num_attention_heads', 'attention.head_count'],
    ['num_key_value_heads', 'attention.head_count_kv'],
    ['head_dim', 'attention.key_length'],
    ['rms_norm_eps', 'attention.layer_norm_rms_epsilon'],
    ['layer_norm_eps', 'attention.layer_norm_epsilon'],
    ['rope_theta', 'rope.freq_base'],
    ['vocab_size', 'vocab_size'],
    ['sliding_window', 'attention.sliding_window'],
  ];
  // a vision-language model keeps its decoder's shape in text_config
  const text = { ...(config.text_config ?? {}), ...config };
  for (const [from, to] of map) if (text[from] !== undefined && text[from] !== null) info[`${arch}.${to}`] = text[from];
  // the image encoder, under Ollama's `<arch>.vision.*` keys
  const vision = config.vision_config;
  if (vision && typeof vision === 'object') {
    const vmap: [string, string][] = [
      ['hidden_size', 'embedding_length'],
      ['num_hidden_layers', 'block_count'],
      ['intermediate_size', 'feed_forward_length'],
      ['num_attention_heads', 'attention.head_count'],
      ['image_size', 'image_size'],
      ['patch_size', 'patch_size'],
      ['num_channels', 'num_channels'],
    ];
    for (const [from, to] of vmap) if (vision[from] !== undefined && vision[from] !== null) info[`${arch}.vision.${to}`] = vision[from];
  }
  for (const k of ['bos_token_id', 'eos_token_id', 'pad_token_id']) {
    if (config[k] !== undefined && config[k] !== null) info[`tokenizer.ggml.${k}`] = config[k];
  }
  return info;
}

/** Ollama's `parameters` text: one `key value` line per value (arrays repeat the key, as `stop` does). */
export function parametersText(params: Record<string, unknown> | undefined): string {
  const lines: string[] = [];
  for (const [k, v] of Object.entries(params ?? {})) {
    for (const x of Array.isArray(v) ? v : [v]) lines.push(`${k.padEnd(30)} ${typeof x === 'string' ? JSON.stringify(x) : String(x)}`);
  }
  return lines.join('\n');
}

export async function showModel(ctx: ShowContext, name: string): Promise<ShownModel> {
  const r = await resolveModel(name, ctx.catalog, ctx.registry);
  if (r.source === 'hub') throw modelNotFound(name);
  const spec = r.spec;
  const record = r.source === 'custom' ? (r.spec as CustomModelRecord) : undefined;
  const profile = record?.profile;
  const local = await readLocalCopy(ctx.layout, spec.repo, spec.dtype);
  const config = local ? await readJsonFile(join(local.dir, 'config.json')) : undefined;
  const template = profile?.template ?? (local ? await ownChatTemplate(local.dir) : '');
  const capabilities = local ? deriveCapabilities(spec.kind, config, template, spec.capabilities) : [...spec.capabilities];
  const family = spec.details?.family ?? (typeof config?.model_type === 'string' ? config.model_type : '');
  const details = {
    parent_model: profile?.parent ?? '',
    format: 'onnx' as const,
    family,
    families: family ? [family] : [],
    parameter_size: spec.details?.parameter_size ?? '',
    quantization_level: spec.details?.quantization_level ?? spec.dtype.toUpperCase(),
  };
  const info = config
    ? modelInfo(config, {
      'general.file_type': spec.dtype,
      ...(spec.details?.parameter_size ? { 'general.parameter_size': spec.details.parameter_size } : {}),
    })
    : { 'general.architecture': family || 'unknown', 'general.file_type': spec.dtype };
  const system = profile?.system ?? '';
  const license = (profile?.license ?? []).join('\n');
  const parameters = parametersText(profile?.parameters);
  const from = local ? `${spec.repo}@${spec.dtype}` : spec.name;
  const modelfile = [
    `# Modelfile generated by svc; ONNX model ${spec.repo} (${spec.dtype}), not a GGUF file`,
    `FROM ${profile?.parent ?? from}`,
    template ? `TEMPLATE """${template}"""` : '',
    system ? `SYSTEM """${system}"""` : '',
    ...Object.entries(profile?.parameters ?? {}).flatMap(([k, v]) =>
      (Array.isArray(v) ? v : [v]).map((x) => `PARAMETER ${k} ${typeof x === 'string' ? JSON.stringify(x) : String(x)}`)
    ),
    ...(profile?.license ?? []).map((l) => `LICENSE """${l}"""`),
  ].filter(Boolean).join('\n');
  return {
    name: spec.name,
    spec,
    unverified: r.source === 'custom',
    source: record ? record.source : 'catalog',
    local: !!local,
    modified_at: local?.modifiedAt,
    details,
    model_info: info,
    capabilities,
    template,
    system,
    parameters,
    license,
    modelfile,
  };
}
