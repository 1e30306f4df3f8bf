/**
 * Dialect B (`/api`) request bodies as valibot schemas: chat, generate, embed, embeddings, create, pull,
 * show, copy and delete. Fields this server does not implement are refused by name rather than
 * misinterpreted. Failures are 400 `{ error }` naming the fields (the native wording, in dialect B's envelope).
 */
import * as v from 'valibot';
import { refused } from './fields.ts';

const KeepAlive = v.optional(v.union([v.string(), v.number()]));
const Options = v.optional(v.record(v.string(), v.unknown()));
/** `"json"`, a JSON schema, or nothing (`""` too). */
const Format = v.optional(
  v.union(
    [v.literal('json'), v.literal(''), v.record(v.string(), v.unknown())],
    (i) => `must be "json" or a JSON schema object, not ${JSON.stringify(i.input)}`,
  ),
);
const Think = v.optional(v.union([v.boolean(), v.string()]));
const Images = v.optional(v.array(v.string()));
const model = v.pipe(v.string(), v.minLength(1, 'model is required'));

const Message = v.looseObject({
  role: v.string(),
  content: v.optional(v.nullable(v.string())),
  images: Images,
  tool_calls: v.optional(v.array(v.unknown())),
  thinking: v.optional(v.string()),
  tool_name: v.optional(v.string()),
});
const Common = {
  model,
  format: Format,
  options: Options,
  stream: v.optional(v.boolean()),
  keep_alive: KeepAlive,
  think: Think,
  logprobs: v.optional(v.boolean()),
  top_logprobs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20))),
};
export const ChatBody = v.looseObject({ ...Common, messages: v.optional(v.array(Message)), tools: v.optional(v.array(v.unknown())) });

/** Generate fields this server does not implement (an empty value asks for nothing). */
const notOnGenerate = refused(
  (x) => x !== undefined && x !== null && x !== false && x !== '' && !(Array.isArray(x) && x.length === 0),
  "not supported by this server's /api/generate",
);
export const GenerateBody = v.looseObject({
  ...Common,
  prompt: v.optional(v.string()),
  system: v.optional(v.string()),
  images: Images,
  raw: notOnGenerate,
  suffix: notOnGenerate,
  template: notOnGenerate,
  context: notOnGenerate,
});

export const EmbedBody = v.looseObject({
  model,
  input: v.optional(v.union([v.string(), v.array(v.string())])),
  truncate: v.optional(v.boolean()),
  keep_alive: KeepAlive,
  options: Options,
  dimensions: v.optional(v.pipe(v.number(), v.integer('must be a positive integer'), v.minValue(1, 'must be a positive integer'))),
});
export const EmbeddingsBody = v.looseObject({ model, prompt: v.optional(v.string()), keep_alive: KeepAlive, options: Options });

export const CreateBody = v.object({
  model: v.optional(v.string()),
  name: v.optional(v.string()),
  from: v.optional(v.string()),
  files: v.optional(v.record(v.string(), v.string())),
  adapters: v.optional(v.record(v.string(), v.string())),
  quantize: v.optional(v.string()),
  system: v.optional(v.string()),
  template: v.optional(v.string()),
  parameters: v.optional(v.record(v.string(), v.unknown())),
  license: v.optional(v.union([v.string(), v.array(v.string())])),
  modelfile: refused(
    (x) => x !== undefined,
    'the "modelfile" field is not supported: send from, files, system, template, parameters and license as JSON fields',
  ),
  stream: v.optional(v.boolean()),
});

export const PullBody = v.object({
  model: v.optional(v.string()),
  name: v.optional(v.string()),
  stream: v.optional(v.boolean()),
  insecure: v.optional(v.boolean()),
});
export const NamedBody = v.object({ model: v.optional(v.string()), name: v.optional(v.string()), verbose: v.optional(v.boolean()) });
export const CopyBody = v.object({ source: v.string(), destination: v.string() });
