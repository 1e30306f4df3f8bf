/**
 * The one error every service throws for an expected failure.
 * `status` is the spec's HTTP-equivalent error_code; `reason` is the stable snake_case machine reason.
 * The HTTP layer maps it to each family's envelope; services never build error bodies.
 */
export class ServiceError extends Error {
  readonly status: number;
  readonly reason: string;
  /** Field-level details for validation failures (problem details `errors`). */
  readonly details?: unknown;
  /** Extra response headers, e.g. Retry-After for 429/503. */
  readonly headers?: Record<string, string>;
  /** Extra top-level members of the native body (e.g. `node` and `hint` of a 421). */
  readonly fields?: Record<string, unknown>;

  constructor(
    status: number,
    reason: string,
    message: string,
    opts: { details?: unknown; headers?: Record<string, string>; fields?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = 'ServiceError';
    this.status = status;
    this.reason = reason;
    this.details = opts.details;
    this.headers = opts.headers;
    this.fields = opts.fields;
  }
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/** Shorthands for the common reasons (docs/errors.md). */
export const invalidArgument = (message: string, details?: unknown) => new ServiceError(400, 'invalid_argument', message, { details });
export const notFound = (message: string) => new ServiceError(404, 'not_found', message);
export const unsupportedFileType = (message: string) => new ServiceError(415, 'unsupported_file_type', message);
export const inputTooLarge = (message: string) => new ServiceError(413, 'input_too_large', message);
/** A capability this build or machine lacks (a native addon, an external tool): 501, as for a missing media tool. */
export const capabilityUnavailable = (message: string) => new ServiceError(501, 'capability_unavailable', message);
