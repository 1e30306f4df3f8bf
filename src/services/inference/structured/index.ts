/**
 * Structured output for the inference engine: compile a constraint once (a refused schema feature is a
 * 400 before any generation starts), then hand its `processorsFor` hook to `engine.generate`, which builds
 * the logits processor once the model, prompt length and token budget are known.
 *
 *   json_object   any JSON object
 *   json_schema   a JSON Schema (the supported subset is in schema.ts; anything else is refused by name)
 *   tool_call     one call in the model's tool-call form (hermes: `<tool_call>\n{...}\n</tool_call>`,
 *                 llama-3 json: `{"name":..., "parameters":...}`), name one of the tools, arguments
 *                 matching that tool's parameter schema
 */
import { ServiceError } from '../../errors.ts';
import { checkJsonDepth } from '../../limits.ts';
import type { LoadedModel } from '../load.ts';
import type { LogitsProcessorLike } from '../sampling.ts';
import { Grammar } from './automaton.ts';
import { type ConstrainedProcessor, createConstrainedProcessor } from './processor.ts';
import { anyObjectNode, compileSchema, type Node } from './schema.ts';
import { vocabOf } from './vocab.ts';

export { anyObjectNode, compileSchema, type Node, unsupportedSchema } from './schema.ts';
export { Grammar } from './automaton.ts';
export { type ConstrainedProcessor, type ConstraintStats, createConstrainedProcessor } from './processor.ts';
export { type Vocab, vocabOf } from './vocab.ts';

export interface ToolSpec {
  name: string;
  /** JSON Schema of the arguments; absent = any object. */
  parameters?: unknown;
}

export type OutputConstraint =
  | { type: 'json_object' }
  | { type: 'json_schema'; schema: unknown }
  | { type: 'tool_call'; format: 'hermes' | 'json' | 'mistral'; tools: ToolSpec[] };

export interface PreparedConstraint {
  grammar: Grammar;
  /** For GenerateOptions.processorsFor. */
  processorsFor(ctx: { model: LoadedModel; promptTokens: number; maxNewTokens: number }): LogitsProcessorLike[];
  /** The processor of the last generation (stats, completeness). */
  processor?: ConstrainedProcessor;
}

const enc = new TextEncoder();

export function grammarOf(c: OutputConstraint): Grammar {
  switch (c.type) {
    case 'json_object':
      return new Grammar(anyObjectNode());
    case 'json_schema':
      return new Grammar(compileSchema(c.schema));
    case 'tool_call': {
      if (c.tools.length === 0) throw new ServiceError(400, 'invalid_request', 'a forced tool call needs at least one tool');
      if (c.format === 'mistral') {
        throw new ServiceError(
          400,
          'unsupported_schema',
          "forcing a tool call is not supported for this model's tool-call format ([TOOL_CALLS] is a special token)",
        );
      }
      const argsKey = c.format === 'json' ? 'parameters' : 'arguments';
      // One object schema per tool: {"name": <that tool>, "<args>": <its parameters>}; anyOf picks by name.
      const schema = {
        anyOf: c.tools.map((t) => ({
          type: 'object',
          properties: { name: { const: t.name }, [argsKey]: t.parameters ?? { type: 'object' } },
          required: ['name', argsKey],
          additionalProperties: false,
        })),
      };
      let node: Node;
      try {
        node = compileSchema(schema);
      } catch (e) {
        if (e instanceof ServiceError) throw new ServiceError(e.status, e.reason, e.message.replace('response schema', 'tool parameters'));
        throw e;
      }
      return c.format === 'hermes' ? new Grammar(node, enc.encode('<tool_call>\n'), enc.encode('\n</tool_call>')) : new Grammar(node);
    }
  }
}

export function prepareConstraint(c: OutputConstraint): PreparedConstraint {
  // A hostile schema nested thousands deep would overflow the compiler's stack: refused by depth first.
  if (c.type === 'json_schema') checkJsonDepth(c.schema, 'the JSON schema');
  if (c.type === 'tool_call') checkJsonDepth(c.tools, 'the tool definitions');
  const grammar = grammarOf(c);
  const prepared: PreparedConstraint = {
    grammar,
    processorsFor({ model, promptTokens, maxNewTokens }) {
      const eos = [model.model.generation_config?.eos_token_id ?? (model.config.eos_token_id as number | number[] | undefined) ?? []].flat()
        .map(Number);
      const p = createConstrainedProcessor(grammar, vocabOf(model.tokenizer), eos, promptTokens, maxNewTokens);
      prepared.processor = p;
      return [p];
    },
  };
  return prepared;
}
