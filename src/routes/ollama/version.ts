import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { VERSION } from '../../version.ts';

/** GET /api/version: the server version; usable as a liveness probe. */
export const versionRoutes = () => new Hono<AppEnv>().get('/version', (c) => c.json({ version: VERSION }));
