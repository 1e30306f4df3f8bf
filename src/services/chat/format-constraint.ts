/**
 * The structured-output module as the chat service's `constrain` hook: `format: "json"` → any JSON object,
 * a schema object → that schema (refused features are 400s naming them). Output is guaranteed to parse and
 * validate within the token budget (src/services/inference/structured/).
 */
import { prepareConstraint } from '../inference/structured/index.ts';
import type { FormatConstraint } from './chat-service.ts';

export const formatConstraint: FormatConstraint = (format, ctx) =>
  prepareConstraint(format === 'json' ? { type: 'json_object' } : { type: 'json_schema', schema: format }).processorsFor(ctx);
