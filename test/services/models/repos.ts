/** Small model repositories in the hub's layout, written to a temp folder for the hub stand-in to serve. */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Deterministic pseudo-random bytes (stand-ins for ONNX weights: only their digest matters here). */
export function bytes(n: number, seed: string): Buffer {
  const out = Buffer.alloc(n);
  let block = createHash('sha256').update(seed).digest();
  for (let off = 0; off < n; off += block.length) {
    block.copy(out, off);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

export interface RepoOptions {
  onnx?: Record<string, number>;
  config?: Record<string, unknown>;
  chatTemplate?: string;
}

/** A decoder-style repo: configs, tokenizer, and `onnx/*` files of the given sizes. */
export async function makeRepo(root: string, name: string, opts: RepoOptions = {}): Promise<string> {
  const dir = join(root, name);
  const files: Record<string, string | Buffer> = {
    'config.json': JSON.stringify(opts.config ?? { architectures: ['LlamaForCausalLM'], model_type: 'llama' }),
    'generation_config.json': JSON.stringify({ bos_token_id: 1, eos_token_id: 2 }),
    'tokenizer.json': JSON.stringify({ version: '1.0', model: { type: 'BPE', vocab: { a: 0, b: 1 } } }),
    'tokenizer_config.json': JSON.stringify({
      chat_template: opts.chatTemplate ?? '{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}',
    }),
    'README.md': `# ${name}\n`,
  };
  for (const [path, size] of Object.entries(opts.onnx ?? { 'onnx/model.onnx': 200_000 })) files[path] = bytes(size, `${name}/${path}`);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

export const tempDir = (prefix: string) => mkdtemp(join(tmpdir(), `svc-${prefix}-`));
