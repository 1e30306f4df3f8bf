/**
 * GET /api/ps: the loaded models, most recently used first, without `expires_at` (residency
 * follows the memory-pressure policy, not a timer). `size_vram` is the size when the model runs on a GPU device, else 0,
 * and `backend` says where it runs (device, ONNX Runtime package, dtype, fallbacks taken).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import type { InferenceEngine } from '../../services/inference/engine.ts';
import type { ResidentInfo } from '../../services/inference/residency.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { tagsEntry } from './models.ts';

const GPU = new Set(['webgpu', 'cuda']);

/** Where a resident model runs, as /api/ps and /api/show report it. */
export const backendOf = (r: ResidentInfo) => ({
  device: r.device,
  runtime: r.ort,
  dtype: r.dtype,
  ...(r.notes.length ? { notes: r.notes } : {}),
});

export function ollamaPsRoutes(engine: InferenceEngine, models: ModelServices) {
  return new Hono<AppEnv>().get('/ps', async (c) => {
    const resident = engine.list();
    const listed = resident.length ? await models.list() : [];
    return c.json({
      models: resident.map((r) => {
        const l = listed.find((m) => m.name === r.name);
        const { modified_at: _m, ...tags } = l ? tagsEntry(l) : { name: r.name, model: r.name, digest: '', modified_at: undefined };
        return {
          ...tags,
          name: r.name,
          model: r.name,
          size: r.sizeBytes,
          size_vram: GPU.has(r.device) ? r.sizeBytes : 0,
          backend: backendOf(r),
        };
      }),
    });
  });
}
