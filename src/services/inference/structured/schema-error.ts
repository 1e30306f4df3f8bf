import { ServiceError } from '../../errors.ts';

/** A schema feature constrained decoding cannot enforce: refused by name, never ignored. */
export const unsupportedSchema = (feature: string) =>
  new ServiceError(
    400,
    'unsupported_schema',
    `response schema: ${feature} is not supported by constrained decoding (the output could not be guaranteed to match)`,
  );
