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
import type { ProcessorContext } from '../generate.ts';
import type { LoadedModel } from '../load.ts';
import { createTriggeredProcessor } from './triggered.ts';
import type { LogitsProcessorLike } from '../sampling.ts';
import { Grammar } from './automaton.ts';
import { type ConstrainedProcessor, createConstrainedProcessor } from './processor.ts';
import { anyObjectNode, compileSchema, type Node } from './schema.ts';
import { vocabOf } from './vocab.ts';

export { anyObjectNode, compileSchema, type Node, unsupportedSchema } from './schema.ts';
export { Grammar } from './automaton.ts';
export { type ConstrainedProcessor, type ConstraintStats, createConstrainedProcessor, type DecodeHints } from './processor.ts';
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
  processorsFor(ctx: ProcessorContext): LogitsProcessorLike[];
  /** The processor of the last generation (stats, completeness). */
  processor?: ConstrainedProcessor;
}

const enc = new TextEncoder();

const eosOf = (model: LoadedModel) =>
  [model.model.generation_config?.eos_token_id ?? (model.config.eos_token_id as number | number[] | undefined) ?? []].flat().map(Number);

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

const afterTrigger = new WeakMap<Grammar, Grammar>();

/**
 * Calls the model chooses to make (tool_choice auto) in the hermes form: free text until it writes
 * `<tool_call>`, then the call constrained as a forced one would be (a known name, arguments valid for that
 * tool), then free text again. Undefined when the calls cannot be constrained: another call form, or a tool
 * whose parameters use a schema feature the grammar refuses (its calls are then parsed from free output).
 */
export function prepareAutoToolCalls(format: 'hermes' | 'json' | 'mistral', tools: ToolSpec[]): PreparedConstraint | undefined {
  if (format !== 'hermes' || tools.length === 0 || tools.some((t) => !t.name)) return undefined;
  let call: Grammar;
  try {
    checkJsonDepth(tools, 'the tool definitions');
    call = cachedGrammar({ type: 'tool_call', format, tools });
  } catch (e) {
    if (e instanceof ServiceError) return undefined;
    throw e;
  }
  // what follows the trigger: the rest of the opening ("\n"), the call, the closing tag
  const trigger = enc.encode('<tool_call>');
  const grammar = afterTrigger.get(call) ?? new Grammar(call.root, call.pre.subarray(trigger.length), call.post);
  afterTrigger.set(call, grammar);
  return {
    grammar,
    processorsFor({ model, promptTokens, maxNewTokens, decode }) {
      // a vocabulary that cannot spell every close, no EOS, or a budget too small for any call: the calls
      // stay unconstrained (nothing is refused in auto)
      const vocab = vocabOf(model.tokenizer);
      const eos = eosOf(model);
      if (!vocab.byteComplete || eos.length === 0) return [];
      const p = createTriggeredProcessor(grammar, trigger, vocab, eos, promptTokens, maxNewTokens, decode);
      return p ? [p] : [];
    },
  };
}

/** Grammars of the constraints seen last (clients repeat their schemas); the masks cached under them follow. */
const MAX_GRAMMARS = 32;
const grammars = new Map<string, Grammar>();

function cachedGrammar(c: OutputConstraint): Grammar {
  const key = JSON.stringify(c);
  let g = grammars.get(key);
  if (g) grammars.delete(key);
  else {
    g = grammarOf(c);
    if (grammars.size >= MAX_GRAMMARS) grammars.delete(grammars.keys().next().value!);
  }
  grammars.set(key, g);
  return g;
}

export function prepareConstraint(c: OutputConstraint): PreparedConstraint {
  // A hostile schema nested thousands deep would overflow the compiler's stack: refused by depth first.
  if (c.type === 'json_schema') checkJsonDepth(c.schema, 'the JSON schema');
  if (c.type === 'tool_call') checkJsonDepth(c.tools, 'the tool definitions');
  const grammar = cachedGrammar(c);
  const prepared: PreparedConstraint = {
    grammar,
    processorsFor({ model, promptTokens, maxNewTokens, decode }) {
      const p = createConstrainedProcessor(grammar, vocabOf(model.tokenizer), eosOf(model), promptTokens, maxNewTokens, decode);
      prepared.processor = p;
      return [p];
    },
  };
  return prepared;
}
