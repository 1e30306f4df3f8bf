/**
 * The Responses API request body (`POST /v1/responses`, its WebSocket mode and `/v1/responses/compact`) as
 * a valibot schema: fields refused rather than misinterpreted, input items and their content parts typed,
 * tools (function and file_search), tool_choice and text.format. Failures are worded as the API words
 * them: the first field as `field: message`, items named `input[0].content[1]`, with the field in `param`.
 */
import * as v from 'valibot';
import { AttributeFilterSchema } from '../services/retrieval/attribute-filter.ts';
import { isPlainObject, never, present, refused, stringOr } from './fields.ts';
import { dialectWording, validate } from './issues.ts';

export const responsesWording = dialectWording('brackets');

const typeOf = (x: unknown) => (x as { type?: unknown } | null)?.type;
const str = v.string('must be a string');

/** A content part of a message item. */
const textPart = (type: string) => v.looseObject({ type: v.literal(type), text: str });
const PARTS = {
  input_text: textPart('input_text'),
  output_text: textPart('output_text'),
  text: textPart('text'),
  summary_text: textPart('summary_text'),
  refusal: v.looseObject({ type: v.literal('refusal') }),
  input_image: v.custom<{ type: 'input_image'; image_url?: string; file_id?: string }>(
    (p) => typeof (p as { image_url?: unknown }).image_url === 'string' || typeof (p as { file_id?: unknown }).file_id === 'string',
    'input_image needs image_url (a data URL or an http(s) URL) or file_id',
  ),
  input_file: v.pipe(
    v.looseObject({
      type: v.literal('input_file'),
      file_id: v.optional(v.unknown()),
      file_data: v.optional(v.unknown()),
      file_url: v.optional(v.unknown()),
      filename: v.optional(v.unknown()),
    }),
    v.forward(
      v.check(
        (p) => typeof p.file_id === 'string' || typeof p.file_data === 'string' || typeof p.file_url !== 'string',
        'file URLs are not fetched by this server; upload the file and pass file_id, or send file_data',
      ),
      ['file_url'],
    ),
    v.check((p) => typeof p.file_id === 'string' || typeof p.file_data === 'string', 'input_file needs file_id or file_data'),
  ),
};
const part = v.lazy((p) =>
  typeof typeOf(p) === 'string' && Object.hasOwn(PARTS, typeOf(p) as string)
    ? PARTS[typeOf(p) as keyof typeof PARTS]
    : v.looseObject({ type: never((i) => `content type "${String(i.input)}" is not supported`) }, 'must be a content part')
);
export type ContentPart = { type: string } & Record<string, unknown>;

const ROLES = ['user', 'assistant', 'system', 'developer'] as const;
const idOpt = { id: v.optional(v.unknown()) };

/** Input items; a message may leave out `type`. */
const ITEMS = {
  message: v.looseObject({
    ...idOpt,
    role: v.picklist(ROLES, `must be one of ${ROLES.join(', ')}`),
    content: stringOr(part, 'must be a string or an array of content parts'),
  }),
  function_call: v.pipe(
    v.looseObject({ ...idOpt, type: v.literal('function_call'), name: v.optional(v.unknown()), call_id: v.optional(v.unknown()) }),
    v.check((it) => typeof it.name === 'string' && typeof it.call_id === 'string', 'a function_call needs name and call_id'),
  ),
  function_call_output: v.looseObject({ ...idOpt, type: v.literal('function_call_output'), call_id: v.string('required') }),
  reasoning: v.looseObject({ ...idOpt, type: v.literal('reasoning') }),
  file_search_call: v.looseObject({ ...idOpt, type: v.literal('file_search_call') }),
  compaction: v.looseObject({ ...idOpt, type: v.literal('compaction') }),
  item_reference: v.looseObject({
    type: never('item_reference is not supported by this server; send the item itself or chain with previous_response_id'),
  }),
};
const itemType = (it: unknown) => typeOf(it) ?? (isPlainObject(it) && 'role' in it ? 'message' : undefined);
const item = v.lazy((it) => {
  if (!isPlainObject(it)) return never('must be an item object');
  const t = itemType(it);
  if (typeof t === 'string' && Object.hasOwn(ITEMS, t)) return ITEMS[t as keyof typeof ITEMS];
  return v.looseObject({ type: never((i) => `item type "${String(i.input)}" is not supported by this server`) });
});
export type InputItem = { type?: string; id?: unknown } & Record<string, unknown>;
/** A list of input items (as a compaction's content expands to). */
export const InputItems = v.array(item);

const functionTool = v.looseObject({
  type: v.literal('function'),
  name: v.pipe(v.string('required for a function tool'), v.minLength(1, 'required for a function tool')),
});
const fileSearchTool = v.looseObject({
  type: v.literal('file_search'),
  vector_store_ids: v.custom<string[]>(
    (x) => Array.isArray(x) && x.length > 0 && x.every((s) => typeof s === 'string'),
    'a non-empty array of vector store ids is required',
  ),
  max_num_results: v.optional(
    v.pipe(
      v.number('must be an integer from 1 to 50'),
      v.integer('must be an integer from 1 to 50'),
      v.minValue(1, 'must be an integer from 1 to 50'),
      v.maxValue(50, 'must be an integer from 1 to 50'),
    ),
  ),
  filters: v.nullish(AttributeFilterSchema),
});
export type FunctionToolBody = v.InferOutput<typeof functionTool>;
export type FileSearchToolBody = v.InferOutput<typeof fileSearchTool>;

const tool = v.lazy((t) =>
  typeOf(t) === 'function' ? functionTool : typeOf(t) === 'file_search' ? fileSearchTool : v.looseObject({
    type: never((i) => `hosted tool type "${String(i.input)}" is not supported by this server (function and file_search are)`),
  })
);

const toolChoice = v.nullish(
  v.union([
    v.picklist(['auto', 'none', 'required']),
    v.looseObject({ type: v.literal('function'), name: v.optional(v.unknown()) }),
    v.looseObject({ type: v.literal('file_search') }),
  ], (i) => `type "${String(typeOf(i.input))}" is not supported (use "auto", "none", "required" or {"type":"function","name":...})`),
);

const textFormat = v.variant('type', [
  v.looseObject({ type: v.literal('text') }),
  v.looseObject({ type: v.literal('json_object') }),
  v.looseObject({
    type: v.literal('json_schema'),
    name: v.optional(v.unknown()),
    schema: v.custom<Record<string, unknown>>((x) => !!x && typeof x === 'object', 'required for type json_schema'),
    strict: v.optional(v.unknown()),
  }),
], (i) => `"${String(i.input)}" is not one of text, json_object, json_schema`);

/** Input and chaining, shared by a response and a compaction. */
const conversation = {
  model: v.nullish(v.pipe(v.string('required'), v.minLength(1, 'required'))),
  previous_response_id: v.nullish(v.string('must be a string')),
  input: v.nullish(stringOr(item, 'must be a string or an array of items')),
};

/** A response body. `model` may be left to an agent: the service requires it once agents are applied. */
export const ResponsesBody = v.pipe(
  v.looseObject({
    ...conversation,
    conversation: refused(present, 'conversation objects are not supported by this server; chain turns with previous_response_id'),
    background: refused(
      (x) => x === true,
      'background execution is not supported by this server; send the request without background (or stream it)',
    ),
    prompt: refused(present, 'reusable prompt templates are not supported by this server'),
    top_logprobs: refused((x) => present(x) && x !== 0, 'log probabilities are not supported by this server'),
    tools: v.nullish(v.array(tool, 'must be an array')),
    instructions: v.nullish(v.string('must be a string')),
    tool_choice: toolChoice,
    text: v.nullish(v.looseObject({ format: v.nullish(textFormat) })),
    max_output_tokens: v.nullish(
      v.pipe(v.number('must be a positive integer'), v.integer('must be a positive integer'), v.minValue(1, 'must be a positive integer')),
    ),
    temperature: v.nullish(v.number('must be a number')),
    top_p: v.nullish(v.number('must be a number')),
    stream: v.nullish(v.boolean('must be a boolean')),
    store: v.nullish(v.boolean('must be a boolean')),
    include: v.nullish(v.array(v.string(), 'must be an array of strings')),
  }, 'the body must be a JSON object'),
  v.forward(
    v.check((b) => (b.tools ?? []).filter((t) => t.type === 'file_search').length <= 1, 'only one file_search tool may be given'),
    ['tools'],
  ),
);
export type ResponsesBody = v.InferOutput<typeof ResponsesBody>;

/** A body changed inside the server (an agent applied) checked as a client's would be. */
export const parseResponsesBody = (body: unknown): ResponsesBody => validate(ResponsesBody, body, responsesWording);

export const CompactBody = v.looseObject(conversation, 'the body must be a JSON object');
export type CompactBody = v.InferOutput<typeof CompactBody>;
