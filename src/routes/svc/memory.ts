/**
 * /svc/v1/memory-stores: a key's memory stores (create, list, read, delete) and their facts (list, add,
 * delete one). Private to the key: another key gets 404. docs/api/agents.md.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { MemoryService } from '../../services/agents/memory-service.ts';
import { ServiceError } from '../../services/errors.ts';

const name = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-"'));
const StoreBody = v.strictObject({ name, embedding_model: v.optional(v.pipe(v.string(), v.minLength(1))) });
const FactBody = v.strictObject({ text: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(300)) });

export function memoryRoutes(memory: MemoryService) {
  const app = new Hono<AppEnv>();
  const owner = (c: { get(k: 'owner'): { id: string } }) => c.get('owner').id;
  app.post('/memory-stores', jsonBody(StoreBody), async (c) => {
    const b = c.req.valid('json');
    return c.json(await memory.createStore(owner(c), b.name, b.embedding_model), 201);
  });
  app.get('/memory-stores', async (c) => c.json({ object: 'list', data: await memory.listStores(owner(c)) }));
  app.get('/memory-stores/:name', async (c) => c.json(await memory.getStore(owner(c), c.req.param('name'))));
  app.delete('/memory-stores/:name', async (c) => c.json(await memory.deleteStore(owner(c), c.req.param('name'))));
  app.get(
    '/memory-stores/:name/facts',
    async (c) => c.json({ object: 'list', data: await memory.listFacts(owner(c), c.req.param('name')) }),
  );
  app.post('/memory-stores/:name/facts', jsonBody(FactBody), async (c) => {
    const f = await memory.addFact(owner(c), c.req.param('name'), c.req.valid('json').text, 'api', c.req.raw.signal);
    if (!f) throw new ServiceError(409, 'conflict', 'the same fact is already stored in this memory store');
    return c.json(f, 201);
  });
  app.delete(
    '/memory-stores/:name/facts/:id',
    async (c) => c.json(await memory.deleteFact(owner(c), c.req.param('name'), c.req.param('id'))),
  );
  return app;
}
