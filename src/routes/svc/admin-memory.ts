/** POST /svc/v1/admin/memory/release-device (admin): give idle models' device memory back now. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import type { InferenceEngine } from '../../services/inference/engine.ts';

export function adminMemoryRoutes(engine: InferenceEngine) {
  const app = new Hono<AppEnv>();
  app.post('/memory/release-device', async (c) => c.json(await engine.releaseDeviceMemory()));
  return app;
}
