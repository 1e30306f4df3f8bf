/**
 * Schema failures as the errors each route family answers: the native family lists every issue with field
 * details; the dialects answer the first issue as `field: message`, as their own APIs do.
 */
import * as v from 'valibot';
import { ServiceError } from '../services/errors.ts';

export const invalidRequest = (message: string, details?: unknown) => new ServiceError(400, 'invalid_request', message, { details });

export function fieldIssues(issues: v.BaseIssue<unknown>[]): { field: string; message: string }[] {
  return issues.map((i) => ({
    field: i.path?.map((p) => String((p as { key?: unknown }).key)).join('.') || '(body)',
    message: i.message,
  }));
}

/** How a route family words a failed schema as the error it answers. */
export interface IssueWording {
  /** Stop at the first issue (the dialects answer one field at a time, as their own APIs do). */
  abortEarly: boolean;
  error(issues: [v.BaseIssue<unknown>, ...v.BaseIssue<unknown>[]]): ServiceError;
}

/** The native family's wording: every issue, with field details. */
export const nativeWording: IssueWording = {
  abortEarly: false,
  error(issues) {
    const details = fieldIssues(issues);
    return invalidRequest(`invalid request: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, details);
  },
};

const OBJECT_TYPES = new Set(['object', 'loose_object', 'strict_object', 'object_with_rest']);

/**
 * The dialects' wording: the first issue as `field: message`, the field also in the details (dialect A's
 * `param`); `dots` names `messages.0.role`, `brackets` names `input[0].role`. A missing member of an object
 * is `required`.
 */
export function dialectWording(style: 'dots' | 'brackets'): IssueWording {
  return {
    abortEarly: true,
    error([issue]) {
      const keys = issue.path?.map((p) => (p as { key?: unknown }).key) ?? [];
      const field = keys.map((k, i) => (typeof k === 'number' && style === 'brackets' ? `[${k}]` : `${i ? '.' : ''}${String(k)}`)).join('');
      const missing = keys.length > 0 && issue.input === undefined && OBJECT_TYPES.has(issue.type);
      const message = missing ? 'required' : issue.message;
      if (!field) return new ServiceError(400, 'invalid_request', message);
      return new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });
    },
  };
}

export function validate<S extends v.GenericSchema>(schema: S, data: unknown, wording: IssueWording = nativeWording): v.InferOutput<S> {
  const r = v.safeParse(schema, data, { abortEarly: wording.abortEarly });
  if (r.success) return r.output;
  throw wording.error(r.issues);
}
