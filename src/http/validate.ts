/** Reads and validates request bodies: malformed JSON and failed validation are 400 with field details. */
import type { Context, MiddlewareHandler } from 'hono';
import * as v from 'valibot';
import { invalidRequest, type IssueWording, nativeWording, validate } from '../schemas/issues.ts';
import { readBodyLimited } from './body-limit.ts';
import type { AppEnv } from './context.ts';

export { dialectWording, fieldIssues, invalidRequest, type IssueWording, nativeWording, validate } from '../schemas/issues.ts';

type JsonTarget<S extends v.GenericSchema> = { in: { json: v.InferInput<S> }; out: { json: v.InferOutput<S> } };

/**
 * The request-validation middleware of every JSON route: the body (bounded by the upload limit) parsed and
 * validated by a valibot schema, then read by the handler as `c.req.valid('json')`, typed. Failures are
 * 400 with field details, worded as the route family words them, in its envelope.
 */
export function jsonBody<S extends v.GenericSchema>(
  schema: S,
  wording: IssueWording = nativeWording,
): MiddlewareHandler<AppEnv, string, JsonTarget<S>> {
  return async (c, next) => {
    c.req.addValidatedData('json', validate(schema, await readJsonBody(c), wording) as object);
    await next();
  };
}

/** Parses the JSON body (bounded by the upload limit) and validates it (for bodies read inside a task's input step). */
export async function readJson<S extends v.GenericSchema>(
  c: Context,
  schema: S,
  wording: IssueWording = nativeWording,
): Promise<v.InferOutput<S>> {
  return validate(schema, await readJsonBody(c), wording);
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
