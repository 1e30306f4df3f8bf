/**
 * Dialect A request bodies (chat completions, legacy completions, embeddings) as valibot schemas: the types
 * and ranges of every field, the fields this server does not serve refused by name (never ignored), and the
 * rules that tie fields together. Failures are worded as the OpenAI API words them: the first field as
 * `field: message`, with the field in `param`. The services plan from the typed output.
 */
import * as v from 'valibot';
import { isPlainObject, present, ranged, rangedInteger, refused, stringOr } from './fields.ts';
import { dialectWording, validate } from './issues.ts';

export const openaiWording = dialectWording('dots');

const refusedBy = (what: string) => (used: (x: unknown) => boolean) => refused(used, `not supported by this server's ${what}`);
const chatRefusal = refusedBy('chat completions');
const nonEmptyObject = (x: unknown) => !!x && typeof x === 'object' && Object.keys(x).length > 0;

const nonEmptyString = v.pipe(v.string('must be a non-empty string'), v.minLength(1, 'must be a non-empty string'));
const model = v.pipe(v.string('required'), v.minLength(1, 'required'));
const stop = v.nullish(
  v.custom<string | string[]>(
    (x) => typeof x === 'string' || (Array.isArray(x) && x.length <= 4 && x.every((s) => typeof s === 'string')),
    'must be a string or an array of up to 4 strings',
  ),
);

/**
 * Extension fields (agents, skills, server tools, memory), typed here; the chat route applies them before
 * planning, and a planner that still finds one refuses it by name.
 */
const extensions = {
  agent: v.nullish(nonEmptyString),
  skill: v.nullish(nonEmptyString),
  skill_inputs: v.nullish(v.custom<Record<string, unknown>>(isPlainObject, 'must be an object')),
  server_tools: v.nullish(
    v.array(
      v.custom<string | { name: string }>(
        (t) => typeof t === 'string' || typeof (t as { name?: unknown })?.name === 'string',
        'each entry must be a name (or an object with a name)',
      ),
      'must be an array of server tool names',
    ),
  ),
  memory_store: v.nullish(nonEmptyString),
  memory: v.nullish(
    v.custom<boolean | Record<string, unknown>>((x) => typeof x === 'boolean' || isPlainObject(x), 'must be a boolean or an object'),
  ),
};

/** Sampling fields shared by chat and completions. */
const sampling = {
  max_completion_tokens: rangedInteger(1, 1 << 24),
  max_tokens: rangedInteger(1, 1 << 24),
  stop,
  seed: ranged(-(2 ** 63), 2 ** 64),
  temperature: ranged(0, 2),
  top_p: ranged(0, 1),
  presence_penalty: ranged(-2, 2),
  frequency_penalty: ranged(-2, 2),
  n: rangedInteger(1, 16),
  stream: v.nullish(v.boolean('must be a boolean')),
  stream_options: v.nullish(v.looseObject({ include_usage: v.nullish(v.boolean('must be a boolean')) }, 'must be an object')),
};

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;
const PARTS: Record<string, string[]> = {
  system: ['text'],
  developer: ['text'],
  user: ['text', 'image_url'],
  assistant: ['text', 'refusal'],
  tool: ['text'],
};

type Part = { type: string; text?: string; image_url?: { url: string } | string; refusal?: unknown };

function contentOf(role: string) {
  const part = v.custom<Part>(
    (p) => {
      const t = (p as Part | null)?.type;
      if (typeof t !== 'string' || !PARTS[role]!.includes(t)) return false;
      if (t === 'text') return typeof (p as Part).text === 'string';
      if (t === 'image_url') {
        const u = (p as Part).image_url;
        return typeof (typeof u === 'string' ? u : u?.url) === 'string';
      }
      return true;
    },
    (i) => {
      const p = i.input as Part | null;
      if (p?.type === 'text') return 'text must be a string';
      if (p?.type === 'image_url' && role === 'user') return 'image_url.url must be a string';
      return `content part type "${p?.type}" is not supported in a ${role} message`;
    },
  );
  return v.nullish(stringOr(part, `${role} content must be a string or an array of parts`));
}

const toolCall = v.looseObject({ id: v.optional(v.string()), function: v.optional(v.looseObject({ name: v.optional(v.string()) })) });

const message = v.variant('role', [
  v.looseObject({ role: v.literal('system'), content: contentOf('system') }),
  v.looseObject({ role: v.literal('developer'), content: contentOf('developer') }),
  v.looseObject({ role: v.literal('user'), content: contentOf('user') }),
  v.looseObject({
    role: v.literal('assistant'),
    content: contentOf('assistant'),
    tool_calls: v.nullish(v.array(toolCall, 'must be an array')),
  }),
  v.looseObject({
    role: v.literal('tool'),
    content: contentOf('tool'),
    tool_call_id: v.string('required for a tool message'),
  }),
], `must be one of ${ROLES.join(', ')}`);

export type ChatMessageBody = v.InferOutput<typeof message>;

const functionTool = v.custom<{ type: 'function'; function: { name: string; description?: string; parameters?: unknown } }>(
  (t) => {
    const x = t as { type?: unknown; function?: { name?: unknown } } | null;
    return x?.type === 'function' && typeof x.function?.name === 'string' && x.function.name !== '';
  },
  'only {"type":"function","function":{"name",...}} tools are supported',
);

const toolChoice = v.nullish(
  v.custom<'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } }>(
    (c) =>
      c === 'none' || c === 'auto' || c === 'required' ||
      ((c as { type?: unknown })?.type === 'function' && typeof (c as { function?: { name?: unknown } })?.function?.name === 'string'),
    'must be "none", "auto", "required" or {"type":"function","function":{"name":...}}',
  ),
);

const responseFormat = v.nullish(
  v.variant('type', [
    v.looseObject({ type: v.literal('text') }),
    v.looseObject({ type: v.literal('json_object') }),
    v.looseObject({
      type: v.literal('json_schema'),
      json_schema: v.looseObject({ name: v.optional(v.unknown()), schema: v.optional(v.unknown()) }, 'required for type json_schema'),
    }),
  ], (i) => `"${String(i.input)}" is not one of text, json_object, json_schema`),
);

const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;

/** Fields of the OpenAI chat request this server does not serve. */
const refusedChat = {
  logit_bias: chatRefusal(nonEmptyObject),
  audio: chatRefusal(present),
  modalities: chatRefusal((x) => Array.isArray(x) && x.some((m) => m !== 'text')),
  prediction: chatRefusal(present),
  web_search_options: chatRefusal(present),
  functions: chatRefusal(present),
  function_call: chatRefusal(present),
  store: chatRefusal((x) => x === true),
  verbosity: chatRefusal(present),
  service_tier: chatRefusal((x) => present(x) && x !== 'auto' && x !== 'default'),
};

/**
 * A chat completion body. `model` may be left to an agent and `messages` to an agent or a skill: the route
 * checks the body again once they are applied, and the planner requires a model.
 */
export const ChatBody = v.pipe(
  v.looseObject(
    {
      model: v.nullish(model),
      ...refusedChat,
      ...extensions,
      ...sampling,
      messages: v.nullish(v.pipe(v.array(message, 'must be a non-empty array'), v.minLength(1, 'must be a non-empty array'))),
      tools: v.nullish(v.array(functionTool, 'must be an array')),
      tool_choice: toolChoice,
      response_format: responseFormat,
      top_logprobs: rangedInteger(0, 20, 'must be an integer from 0 to 20', 'must be an integer from 0 to 20'),
      logprobs: v.nullish(v.boolean('must be a boolean')),
      reasoning_effort: v.nullish(v.picklist(EFFORTS, `must be one of ${EFFORTS.join(', ')}`)),
    },
    'the body must be a JSON object',
  ),
  v.forward(v.check((b) => !present(b.stream_options) || b.stream === true, 'only allowed with stream: true'), ['stream_options']),
  // an agent or a skill supplies messages of its own
  v.forward(v.check((b) => present(b.messages) || present(b.agent) || present(b.skill), 'must be a non-empty array'), ['messages']),
  v.forward(
    v.check((b) => !(b.n && b.n > 1 && b.stream === true), 'n > 1 is not supported with stream (ask for one streamed choice per request)'),
    ['n'],
  ),
  v.forward(
    v.check(
      (b) => present(b.tools) || !present(b.tool_choice) || b.tool_choice === 'none' || b.tool_choice === 'auto',
      'given without tools',
    ),
    ['tool_choice'],
  ),
  v.forward(v.check((b) => b.logprobs === true || !present(b.top_logprobs), 'requires logprobs: true'), ['top_logprobs']),
);
export type ChatBody = v.InferOutput<typeof ChatBody>;

/** A body built inside the server (an agent turn, a Responses request) checked as a client's would be. */
export const parseChatBody = (body: unknown): ChatBody => validate(ChatBody, body, openaiWording);

const completionRefusal = refusedBy('completions');
const refusedCompletion = {
  suffix: completionRefusal((x) => typeof x === 'string' && x !== ''),
  best_of: completionRefusal((x) => typeof x === 'number' && x > 1),
  logit_bias: completionRefusal(nonEmptyObject),
};

const strings = v.custom<string | string[]>(
  (x) => typeof x === 'string' || (Array.isArray(x) && x.length > 0 && x.every((s) => typeof s === 'string')),
  'must be a string or a non-empty array of strings (token arrays are not supported)',
);

export const CompletionBody = v.pipe(
  v.looseObject(
    {
      model,
      ...refusedCompletion,
      ...extensions,
      prompt: v.nullish(strings),
      ...sampling,
      logprobs: v.nullish(
        v.custom<false | number>(
          (x) => x === false || (Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 20),
          'must be an integer from 0 to 20',
        ),
      ),
      echo: v.nullish(v.boolean('must be a boolean')),
    },
    'the body must be a JSON object',
  ),
  v.forward(
    v.check(
      (b) => !(b.stream === true && Array.isArray(b.prompt) && b.prompt.length > 1),
      'an array of prompts is not supported with stream',
    ),
    ['prompt'],
  ),
  v.forward(
    v.check((b) => !(b.n && b.n > 1 && b.stream === true), 'n > 1 is not supported with stream (ask for one streamed choice per request)'),
    ['n'],
  ),
  v.forward(
    v.check(
      (b) => !(typeof b.logprobs === 'number' && b.echo === true),
      'is not supported together with echo (the prompt tokens are not scored)',
    ),
    ['logprobs'],
  ),
);
export type CompletionBody = v.InferOutput<typeof CompletionBody>;

export const EmbeddingBody = v.looseObject(
  {
    model,
    input: v.pipe(
      strings,
      v.check((x) => (Array.isArray(x) ? !x.includes('') : x !== ''), 'must not contain empty strings'),
    ),
    encoding_format: v.nullish(v.picklist(['float', 'base64'], 'must be float or base64')),
    dimensions: v.nullish(
      v.pipe(v.number('must be a positive integer'), v.integer('must be a positive integer'), v.minValue(1, 'must be a positive integer')),
    ),
  },
  'the body must be a JSON object',
);
export type EmbeddingBody = v.InferOutput<typeof EmbeddingBody>;
