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

  constructor(status: number, reason: string, message: string, opts: { details?: unknown; headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = 'ServiceError';
    this.status = status;
    this.reason = reason;
    this.details = opts.details;
    this.headers = opts.headers;
  }
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/** Shorthands for the reasons SPEC names. */
export const invalidArgument = (message: string, details?: unknown) => new ServiceError(400, 'invalid_argument', message, { details });
export const notFound = (message: string) => new ServiceError(404, 'not_found', message);
export const unsupportedFileType = (message: string) => new ServiceError(415, 'unsupported_file_type', message);
export const inputTooLarge = (message: string) => new ServiceError(413, 'input_too_large', message);
export const serviceUnavailable = (message: string, retryAfterSeconds: number) =>
  new ServiceError(503, 'service_unavailable', message, { headers: { 'Retry-After': String(retryAfterSeconds) } });
