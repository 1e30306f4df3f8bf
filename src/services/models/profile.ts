/**
 * What an imported hub model is (kind, capabilities), guessed from the hub's pipeline tag and from the
 * model's own config.json and chat template once downloaded. Catalog entries declare this instead.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Capability, ModelKind } from './spec.ts';

const PIPELINE_KIND: Record<string, ModelKind> = {
  'text-generation': 'generation',
  'text2text-generation': 'generation',
  'image-text-to-text': 'generation',
  'feature-extraction': 'embedding',
  'sentence-similarity': 'embedding',
  'text-ranking': 'reranker',
  'text-classification': 'reranker',
  'automatic-speech-recognition': 'speech',
};

export async function inferProfile(
  dir: string,
  pipelineTag?: string,
): Promise<{ kind: ModelKind; capabilities: Capability[]; family?: string }> {
  const config = (await readJsonFile(join(dir, 'config.json'))) ?? {};
  const archs: string[] = Array.isArray(config.architectures) ? config.architectures : [];
  const family = typeof config.model_type === 'string' ? config.model_type : undefined;
  const kind: ModelKind = (pipelineTag && PIPELINE_KIND[pipelineTag]) || kindFromArchitectures(archs, family);

  const capabilities: Capability[] = [];
  if (kind === 'embedding') capabilities.push('embedding');
  if (kind === 'generation') {
    capabilities.push('completion');
    const template = await chatTemplate(dir);
    if (/\btools\b/.test(template)) capabilities.push('tools');
    if (/enable_thinking|<think>/.test(template)) capabilities.push('thinking');
    if (pipelineTag === 'image-text-to-text' || config.vision_config) capabilities.push('vision');
  }
  return { kind, capabilities, family };
}

function kindFromArchitectures(archs: string[], family?: string): ModelKind {
  if (family === 'whisper' || archs.some((a) => /SpeechSeq2Seq|^Whisper/.test(a))) return 'speech';
  if (archs.some((a) => /ForCausalLM|ForConditionalGeneration/.test(a))) return 'generation';
  if (archs.some((a) => /ForSequenceClassification/.test(a))) return 'reranker';
  return 'embedding';
}

async function chatTemplate(dir: string): Promise<string> {
  const jinja = await readFile(join(dir, 'chat_template.jinja'), 'utf8').catch(() => '');
  const tc = (await readJsonFile(join(dir, 'tokenizer_config.json'))) ?? {};
  const t = tc.chat_template;
  const fromConfig = typeof t === 'string' ? t : Array.isArray(t) ? t.map((x: { template?: string }) => x.template ?? '').join('\n') : '';
  return `${jinja}\n${fromConfig}`;
}

// deno-lint-ignore no-explicit-any -- a model repository's JSON, read field by field
async function readJsonFile(file: string): Promise<Record<string, any> | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
}
