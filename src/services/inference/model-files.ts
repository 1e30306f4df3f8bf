/** What a hub-layout model directory holds: ONNX file per dtype, size on disk, pooling settings. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The dtypes transformers.js knows, with its file-name suffixes (onnx/model<suffix>.onnx). */
export const DTYPE_SUFFIX = {
  fp32: '',
  fp16: '_fp16',
  int8: '_int8',
  uint8: '_uint8',
  q8: '_quantized',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
} as const;
export type Dtype = keyof typeof DTYPE_SUFFIX;

export const onnxFileName = (dtype: Dtype, base = 'model') => `${base}${DTYPE_SUFFIX[dtype]}.onnx`;

/** Dtypes present in `dir/onnx/`, in the order a default should prefer (full precision first). */
export async function availableDtypes(dir: string, base = 'model'): Promise<Dtype[]> {
  const files = new Set(await readdir(join(dir, 'onnx')).catch(() => [] as string[]));
  return (Object.keys(DTYPE_SUFFIX) as Dtype[]).filter((d) => files.has(onnxFileName(d, base)));
}

/** Bytes of the ONNX graph plus its external data chunks (model.onnx_data, model.onnx_data_1, ...). */
export async function modelSizeBytes(dir: string, dtype: Dtype, base = 'model'): Promise<number> {
  const name = onnxFileName(dtype, base);
  const files = await readdir(join(dir, 'onnx')).catch(() => [] as string[]);
  let total = 0;
  for (const f of files) {
    if (f === name || f === `${name}_data` || f.startsWith(`${name}_data_`)) total += (await stat(join(dir, 'onnx', f))).size;
  }
  return total;
}

export async function readJson<T = Record<string, unknown>>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

export type PoolingMode = 'mean' | 'cls' | 'max' | 'last_token' | 'none';
export interface PoolingConfig {
  pooling: PoolingMode;
  normalize: boolean;
}

/**
 * Pooling and normalisation from the sentence-transformers files when present (modules.json,
 * 1_Pooling/config.json, a Normalize module); otherwise mean + normalize, the common embedding recipe.
 */
export async function readPooling(dir: string): Promise<PoolingConfig> {
  const modules = await readJson<{ path: string; type: string }[]>(join(dir, 'modules.json'));
  if (!Array.isArray(modules)) return { pooling: 'mean', normalize: true };
  const normalize = modules.some((m) => m.type?.endsWith('.Normalize'));
  const poolingModule = modules.find((m) => m.type?.endsWith('.Pooling'));
  if (!poolingModule) return { pooling: 'none', normalize };
  const c = (await readJson<Record<string, unknown>>(join(dir, poolingModule.path, 'config.json'))) ?? {};
  const pooling: PoolingMode = c.pooling_mode_cls_token
    ? 'cls'
    : c.pooling_mode_max_tokens
    ? 'max'
    : c.pooling_mode_lasttoken
    ? 'last_token'
    : 'mean';
  return { pooling, normalize };
}
