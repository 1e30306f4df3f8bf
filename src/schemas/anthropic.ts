/**
 * Anthropic Messages request bodies (`/v1/messages` and `/v1/messages/count_tokens`) as valibot schemas:
 * every field this server serves typed, known features it does not have refused by name with the reason,
 * any other field refused as unknown, and block types checked per role. Failures are worded as Anthropic
 * words them: the first field as `field: message`, in an `invalid_request_error`. See docs/api/anthropic.md.
 */
import * as v from 'valibot';
import { ServiceError } from '../services/errors.ts';
import { isPlainObject, never, present, ranged, rangedInteger, refused, stringOr } from './fields.ts';
import { dialectWording, type IssueWording } from './issues.ts';

const THREAD_MESSAGE = 'thread: message threads are not supported by this server; send the full conversation without thread';
const dots = dialectWording('dots');

/**
 * The dialect's wording, and one refusal with its own code: the SDK's thread helpers (and its tool runner)
 * resend the whole conversation unthreaded on `thread_unsupported_request`.
 */
export const anthropicWording: IssueWording = {
  abortEarly: true,
  error(issues) {
    if (issues[0].path?.length === 1 && issues[0].path[0].key === 'thread') {
      return new ServiceError(400, 'thread_unsupported_request', THREAD_MESSAGE, {
        fields: { details: { error_code: 'thread_unsupported_request' } },
      });
    }
    return dots.error(issues);
  },
};

/** context_management asking for no edits changes nothing: accepted, so clients that always send it work. */
const noEdits = (x: unknown) =>
  x === null ||
  (isPlainObject(x) && Object.keys(x).every((k) => k === 'edits') &&
    (x.edits === undefined || (Array.isArray(x.edits) && x.edits.length === 0)));

/** Known Anthropic features this server does not have, refused with the reason given to the caller. */
const unsupported = {
  mcp_servers: refused(() => true, 'remote MCP servers are not supported by this server'),
  container: refused(() => true, 'code-execution containers are not supported by this server'),
  context_management: refused((x) => !noEdits(x), 'server-side context management is not supported by this server'),
  output_format: refused(() => true, 'the beta field is not supported; use output_config.format'),
  inference_geo: refused(() => true, 'inference geography is not a choice on this server'),
  workspace_id: refused(() => true, 'workspaces are not supported by this server'),
  thread: refused(present, THREAD_MESSAGE),
};

const unknownField = never('unknown field; not supported by this server');

const base64Source = v.looseObject({
  type: v.literal('base64'),
  media_type: v.string('must be a string'),
  data: v.string('must be a string'),
});
const urlSource = v.looseObject({ type: v.literal('url'), url: v.string('must be a string') });
const imageSource = v.lazy((s) =>
  (s as { type?: unknown } | null)?.type === 'base64'
    ? base64Source
    : (s as { type?: unknown } | null)?.type === 'url'
    ? urlSource
    : v.looseObject(
      { type: never((i) => `"${String(i.input)}" image sources are not supported (use base64 or url)`) },
      'required',
    )
);

const textBlock = v.looseObject({ type: v.literal('text'), text: v.string('must be a string') });
const imageBlock = v.looseObject({ type: v.literal('image'), source: imageSource });
/** A block whose type is not served where it stands: refused on its `type`. */
const otherBlock = (where: string) =>
  v.looseObject({ type: never((i) => `"${String(i.input)}" blocks are not supported ${where}`) }, 'must be a content block');
const blockType = (b: unknown) => (b as { type?: unknown } | null)?.type;

const resultBlock = v.lazy((b) =>
  blockType(b) === 'text' ? textBlock : blockType(b) === 'image' ? imageBlock : otherBlock('inside tool_result')
);
const toolResultBlock = v.looseObject({
  type: v.literal('tool_result'),
  tool_use_id: v.string('required'),
  content: v.nullish(stringOr(resultBlock, 'must be a string or an array of blocks')),
  is_error: v.optional(v.unknown()),
});
const toolUseBlock = v.custom<{ type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }>(
  (b) => {
    const x = b as { id?: unknown; name?: unknown; input?: unknown };
    return typeof x.id === 'string' && typeof x.name === 'string' && isPlainObject(x.input);
  },
  'tool_use needs id, name and an input object',
);
const thinkingBlock = v.looseObject({ type: v.literal('thinking'), thinking: v.string('must be a string') });
const redactedThinkingBlock = v.looseObject({ type: v.literal('redacted_thinking') });

const USER_BLOCKS = { text: textBlock, image: imageBlock, tool_result: toolResultBlock };
const ASSISTANT_BLOCKS = { text: textBlock, tool_use: toolUseBlock, thinking: thinkingBlock, redacted_thinking: redactedThinkingBlock };

const blocksOf = <B extends Record<string, v.GenericSchema>>(role: string, blocks: B) =>
  stringOr(
    v.lazy((b) => (Object.hasOwn(blocks, String(blockType(b)))
      ? blocks[String(blockType(b))]!
      : otherBlock(`in a ${role} message by this server`))
    ) as v.LazySchema<B[keyof B]>,
    'must be a string or an array of content blocks',
  );

const message = v.variant('role', [
  v.looseObject({ role: v.literal('user'), content: blocksOf('user', USER_BLOCKS) }),
  v.looseObject({ role: v.literal('assistant'), content: blocksOf('assistant', ASSISTANT_BLOCKS) }),
], 'must be "user" or "assistant"');
export type AnthropicMessage = v.InferOutput<typeof message>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const tool = v.looseObject({
  type: v.nullish(
    v.literal('custom', (i) => `server tool "${String(i.input)}" is not supported by this server (only custom tools with an input_schema)`),
  ),
  name: v.pipe(v.string('must match ^[a-zA-Z0-9_-]{1,128}$'), v.regex(TOOL_NAME, 'must match ^[a-zA-Z0-9_-]{1,128}$')),
  input_schema: v.custom<Record<string, unknown>>(isPlainObject, 'required: a JSON Schema object'),
  description: v.optional(v.string('must be a string')),
}, 'must be an object');

const parallel = { disable_parallel_tool_use: v.optional(v.unknown()) };
const toolChoice = v.nullish(
  v.variant('type', [
    v.looseObject({ type: v.literal('auto'), ...parallel }),
    v.looseObject({ type: v.literal('any'), ...parallel }),
    v.looseObject({ type: v.literal('tool'), name: v.string('required when tool_choice.type is "tool"'), ...parallel }),
    v.looseObject({ type: v.literal('none') }),
  ], 'must be one of auto, any, tool, none'),
);

const THINKING_TYPES = ['enabled', 'adaptive', 'between_tools', 'disabled'] as const;
const thinking = v.nullish(
  v.pipe(
    v.looseObject({
      display: v.nullish(v.picklist(['summarized', 'omitted'], 'must be "summarized" or "omitted"')),
      type: v.picklist(THINKING_TYPES, `must be one of ${THINKING_TYPES.join(', ')}`),
      budget_tokens: v.nullish(
        v.pipe(
          v.number('must be a positive integer'),
          v.integer('must be a positive integer'),
          v.minValue(1, 'must be a positive integer'),
        ),
      ),
    }, 'must be an object'),
    v.forward(v.check((t) => t.type !== 'enabled' || present(t.budget_tokens), 'must be a positive integer'), ['budget_tokens']),
  ),
);

const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
const outputConfig = v.nullish(
  v.objectWithRest(
    {
      effort: v.nullish(v.picklist(EFFORTS, `must be one of ${EFFORTS.join(', ')}`)),
      format: v.nullish(
        v.custom<{ type: 'json_schema'; schema: Record<string, unknown> }>(
          (f) => isPlainObject(f) && f.type === 'json_schema' && isPlainObject(f.schema),
          'must be {"type":"json_schema","schema":{...}}',
        ),
      ),
    },
    unknownField,
    'must be an object',
  ),
);

/** What count_tokens and a message share: the prompt, as the message would render it. */
const prompt = {
  model: v.pipe(v.string('required'), v.minLength(1, 'required')),
  system: v.nullish(
    stringOr(
      v.looseObject({ type: v.literal('text'), text: v.string() }, 'only text blocks are allowed in system'),
      'must be a string or an array of text blocks',
    ),
  ),
  messages: v.pipe(v.array(message, 'must be a non-empty array'), v.minLength(1, 'must be a non-empty array')),
  tools: v.nullish(v.array(tool, 'must be an array')),
  tool_choice: toolChoice,
  thinking,
  output_config: outputConfig,
  cache_control: v.optional(v.unknown()),
};

/** tool_choice any / tool forces a call: it needs tools. */
const choiceHasTools = (b: { tools?: unknown; tool_choice?: { type: string } | null }) =>
  present(b.tools) || !(b.tool_choice?.type === 'any' || b.tool_choice?.type === 'tool');

export const MessagesBody = v.pipe(
  v.objectWithRest(
    {
      ...unsupported,
      metadata: v.nullish(
        v.objectWithRest({ user_id: v.optional(v.unknown()) }, never('unknown field; only user_id is accepted'), 'must be an object'),
      ),
      service_tier: v.nullish(v.picklist(['auto', 'standard_only'], 'must be "auto" or "standard_only"')),
      speed: v.nullish(v.picklist(['standard', 'fast'], 'must be "standard" or "fast"')),
      max_tokens: rangedInteger(1, 1 << 24, 'must be an integer from 1 to 16777216', 'must be an integer from 1 to 16777216'),
      stream: v.nullish(v.boolean('must be a boolean')),
      stop_sequences: v.nullish(
        v.custom<string[]>(
          (x) => Array.isArray(x) && x.every((s) => typeof s === 'string' && s.length > 0),
          'must be an array of non-empty strings',
        ),
      ),
      ...prompt,
      temperature: ranged(0, 1),
      top_p: ranged(0, 1),
      top_k: rangedInteger(0, 1 << 20, 'must be an integer from 0 to 1048576', 'must be an integer from 0 to 1048576'),
      diagnostics: v.optional(v.unknown()),
      user_profile_id: v.optional(v.unknown()),
    },
    unknownField,
    'the body must be a JSON object',
  ),
  v.forward(v.check((b) => present(b.max_tokens), 'required'), ['max_tokens']),
  v.forward(v.check((b) => choiceHasTools(b), 'given without tools'), ['tool_choice']),
  v.forward(
    v.check((b) => !(b.thinking?.type === 'enabled' && b.thinking.budget_tokens! >= b.max_tokens!), 'must be less than max_tokens'),
    ['thinking', 'budget_tokens'],
  ),
);
export type MessagesBody = v.InferOutput<typeof MessagesBody>;

export const CountTokensBody = v.pipe(
  v.objectWithRest({ ...unsupported, ...prompt }, unknownField, 'the body must be a JSON object'),
  v.forward(v.check((b) => choiceHasTools(b), 'given without tools'), ['tool_choice']),
);
export type CountTokensBody = v.InferOutput<typeof CountTokensBody>;
