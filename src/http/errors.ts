/**
 * The one mapper from ServiceError to each family's envelope:
 *  dialect A (/v1)  { error: { message, type, code, param } }
 *  dialect B (/api) { error: "message" }
 *  Anthropic        { type: "error", error: { type, message } }
 *  native           { error: reason, message }, as RFC 9457 problem details for 400/404/413/415/422.
 * No route builds an error body by hand.
 */
import type { Context } from 'hono';
import { isServiceError, ServiceError } from '../services/errors.ts';
import { type Family, familyOf } from './family.ts';

const PROBLEM_STATUSES = new Set([400, 404, 413, 415, 422]);

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  499: 'Client Closed Request',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

function openaiType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** First field named by validation details, for dialect A's `param`. */
function paramOf(details: unknown): string | null {
  if (Array.isArray(details) && details[0] && typeof details[0].field === 'string') return details[0].field;
  return null;
}

/** Anthropic's error types by status (docs/api/anthropic.md). */
function anthropicType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'overloaded_error';
  if (status >= 500 || status === 499) return 'api_error';
  return 'invalid_request_error';
}

export interface ErrorPayload {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export function errorPayload(err: ServiceError, family: Family, instance?: string): ErrorPayload {
  const headers: Record<string, string> = { ...(err.headers ?? {}) };
  if (family === 'openai') {
    headers['Content-Type'] = 'application/json';
    return {
      status: err.status,
      headers,
      body: { error: { message: err.message, type: openaiType(err.status), code: err.reason, param: paramOf(err.details) } },
    };
  }
  if (family === 'anthropic') {
    headers['Content-Type'] = 'application/json';
    return {
      status: err.status,
      headers,
      body: { type: 'error', error: { type: anthropicType(err.status), message: err.message, ...err.fields } },
    };
  }
  if (family === 'ollama') {
    headers['Content-Type'] = 'application/json';
    return { status: err.status, headers, body: { error: err.message } };
  }
  if (PROBLEM_STATUSES.has(err.status)) {
    headers['Content-Type'] = 'application/problem+json';
    const body: Record<string, unknown> = {
      type: `urn:svc:problem:${err.reason}`,
      title: STATUS_TITLES[err.status] ?? 'Error',
      status: err.status,
      detail: err.message,
      instance,
      error: err.reason,
      message: err.message,
      ...err.fields,
    };
    if (err.details !== undefined) body.errors = err.details;
    return { status: err.status, headers, body };
  }
  headers['Content-Type'] = 'application/json';
  const body: Record<string, unknown> = { error: err.reason, message: err.message, ...err.fields };
  if (err.details !== undefined) body.details = err.details;
  return { status: err.status, headers, body };
}

/** The error answer, built through the context so the headers prepared for every response stay on it. */
export function errorResponse(c: Context, err: ServiceError, family: Family, instance?: string): Response {
  const p = errorPayload(err, family, instance);
  return c.body(JSON.stringify(p.body), p.status as 400, p.headers);
}

/** Turns anything thrown into a response; unknown faults become a sanitized 500 whose id is in the log. */
export function toErrorResponse(err: unknown, c: Context, logError: (msg: string, err: unknown) => void): Response {
  const path = c.req.path;
  const family = familyOf(path, c.req.header('anthropic-version'));
  if (isServiceError(err)) return errorResponse(c, err, family, path);
  const id = (c.get('requestId') as string | undefined) ?? 'unknown';
  logError(`unhandled error rid=${id} ${c.req.method} ${path}`, err);
  return errorResponse(c, new ServiceError(500, 'internal_error', `Internal server error (request id ${id})`), family, path);
}
