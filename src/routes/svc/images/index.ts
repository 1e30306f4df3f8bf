/** The image task routes (docs/api/images.md), each a thin shell over src/services/images/. */
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/context.ts';
import { imageConvertRoutes } from './convert.ts';
import type { ImageRouteDeps } from './image-task.ts';
import { imageUtilityRoutes } from './utilities.ts';

export function imageRoutes(deps: ImageRouteDeps) {
  const app = new Hono<AppEnv>();
  for (const routes of [imageConvertRoutes, imageUtilityRoutes]) app.route('/', routes(deps));
  return app;
}
