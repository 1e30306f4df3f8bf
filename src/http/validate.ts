/** Reads and validates request bodies: malformed JSON and failed validation are 400 with field details. */
import type { Context, MiddlewareHandler } from 'hono';
import * as v from 'valibot';
import { ServiceError } from '../services/errors.ts';
import { readBodyLimited } from './body-limit.ts';
import type { AppEnv } from './context.ts';

export const invalidRequest = (message: string, details?: unknown) => new ServiceError(400, 'invalid_request', message, { details });

export function fieldIssues(issues: v.BaseIssue<unknown>[]): { field: string; message: string }[] {
  return issues.map((i) => ({
    field: i.path?.map((p) => String((p as { key?: unknown }).key)).join('.') || '(body)',
    message: i.message,
  }));
}

export function validate<S extends v.GenericSchema>(schema: S, data: unknown): v.InferOutput<S> {
  const r = v.safeParse(schema, data);
  if (r.success) return r.output;
  const details = fieldIssues(r.issues);
  throw invalidRequest(`invalid request: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details);
}

type JsonTarget<S extends v.GenericSchema> = { in: { json: v.InferInput<S> }; out: { json: v.InferOutput<S> } };

/**
 * The request-validation middleware of every JSON route: the body (bounded by the upload limit) parsed and
 * validated by a valibot schema, then read by the handler as `c.req.valid('json')`, typed. Failures are
 * 400 with field details, in the route family's envelope.
 */
export function jsonBody<S extends v.GenericSchema>(schema: S): MiddlewareHandler<AppEnv, string, JsonTarget<S>> {
  return async (c, next) => {
    c.req.addValidatedData('json', validate(schema, await readJsonBody(c)) as object);
    await next();
  };
}

/** Parses the JSON body (bounded by the upload limit) and validates it (for bodies read inside a task's input step). */
export async function readJson<S extends v.GenericSchema>(c: Context, schema: S): Promise<v.InferOutput<S>> {
  return validate(schema, await readJsonBody(c));
}

export async function readJsonBody(c: Context): Promise<unknown> {
  const text = new TextDecoder().decode(await readBodyLimited(c));
  if (text.trim() === '') {
    throw invalidRequest('request body is empty; a JSON object was expected', [{ field: '(body)', message: 'required' }]);
  }
  try {
    return JSON.parse(text);
  } catch {
    // The engine's own parse message differs between V8 and JavaScriptCore: keep answers identical on every runtime.
    throw invalidRequest('malformed JSON in the request body', [{ field: '(body)', message: 'malformed JSON' }]);
  }
}
