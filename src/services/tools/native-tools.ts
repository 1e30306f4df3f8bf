/**
 * The native tasks as tools: a name, a JSON-schema input and the route that serves it. The MCP server
 * (src/routes/mcp/) and server tools in chat call a tool by sending its request to the very route a client
 * would use, under the caller's key: validation, limits, the job contract and ownership stay the routes'.
 */

export type JsonSchema = Record<string, unknown>;

export interface NativeTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  /** The route that serves it (POST, JSON body). */
  path: string;
  /** The route when it depends on the arguments (a resource id in the path). */
  pathOf?(args: Record<string, unknown>): string;
  /** A task route (job contract): run as a job so progress can be watched; otherwise one plain request. */
  task: boolean;
  /** The route's body built from the tool's arguments. */
  body(args: Record<string, unknown>): Record<string, unknown>;
}

const oneDocument: Record<string, JsonSchema> = {
  file_id: { type: 'string', description: 'id of a file uploaded to this server (POST /v1/files or /svc/v1/files/upload)' },
  file_base64: { type: 'string', description: 'the document itself, base64-encoded (used when no file_id is given)' },
  filename: { type: 'string', description: 'name of the base64 document (optional)' },
};
/** A text task takes `text`, or one document. */
const textOrOneDocument: Record<string, JsonSchema> = { text: { type: 'string' }, ...oneDocument };
const password = { type: 'string', description: 'password of an encrypted PDF' };
const pages = { type: 'string', description: 'pages, 1-based: "1-3,5,8-", "all" or "last"' };

/** `file_id` or `file_base64` → the task route's JSON input forms. */
function documentInput(a: Record<string, unknown>): Record<string, unknown> {
  if (typeof a.file_id === 'string') return { input_format: 'FileIdentifier', file_id: a.file_id };
  if (typeof a.file_base64 === 'string') {
    return { input_format: 'Base64EncodedFile', file: a.file_base64, ...(typeof a.filename === 'string' ? { filename: a.filename } : {}) };
  }
  return {}; // the route answers 400 naming "file"
}

/** A text task's input: `text` when given (sent as is), else the document. */
const textOrDocument = (a: Record<string, unknown>) => (typeof a.text === 'string' ? {} : documentInput(a));

function documentsInput(a: Record<string, unknown>): Record<string, unknown> {
  const files: Record<string, unknown>[] = [];
  for (const id of Array.isArray(a.file_ids) ? a.file_ids : []) files.push({ file_id: id });
  for (const b of Array.isArray(a.files_base64) ? a.files_base64 : []) files.push({ input_format: 'Base64EncodedFile', file: b });
  return { files };
}

/** Copies the named arguments that are present. */
const pick = (a: Record<string, unknown>, keys: string[]) =>
  Object.fromEntries(keys.filter((k) => a[k] !== undefined).map((k) => [k, a[k]]));

const object = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  additionalProperties: false,
});

export const NATIVE_TOOLS: NativeTool[] = [
  {
    name: 'pdf_info',
    title: 'PDF info',
    path: '/svc/v1/pdf-info',
    task: true,
    description: 'Page count, page sizes, metadata, encryption, signatures and outline of a PDF.',
    inputSchema: object({ ...oneDocument, password }),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['password']) }),
  },
  {
    name: 'pdf_merge',
    title: 'Merge PDFs',
    path: '/svc/v1/pdf-merge',
    task: true,
    description: 'Merges PDFs in order into one new PDF, returned as a file of this server.',
    inputSchema: object({
      file_ids: { type: 'array', items: { type: 'string' }, description: 'ids of uploaded PDFs, in order' },
      files_base64: { type: 'array', items: { type: 'string' }, description: 'base64 PDFs, appended after file_ids' },
      bookmarks: { type: 'boolean', description: 'add one bookmark per input document' },
    }),
    body: (a) => ({ ...documentsInput(a), ...pick(a, ['bookmarks']), delivery: 'file_id' }),
  },
  {
    name: 'pdf_split',
    title: 'Split a PDF',
    path: '/svc/v1/pdf-split',
    task: true,
    description: 'Splits a PDF by page ranges, every N pages, or into single pages; each part is returned as a file of this server.',
    inputSchema: object({
      ...oneDocument,
      password,
      ranges: { type: 'array', items: { type: 'string' }, description: 'one part per range, e.g. ["1-3","4-"]' },
      every: { type: 'integer', minimum: 1, description: 'a part every N pages' },
      single: { type: 'boolean', description: 'one part per page' },
    }),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['password', 'ranges', 'every', 'single']), delivery: 'file_id' }),
  },
  {
    name: 'pdf_search',
    title: 'Search a PDF',
    path: '/svc/v1/pdf-search',
    task: true,
    description: 'Finds text in a PDF, with page numbers and positions.',
    inputSchema: object({
      ...oneDocument,
      password,
      query: { type: 'string' },
      regex: { type: 'boolean' },
      case_sensitive: { type: 'boolean' },
      pages,
    }, ['query']),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['password', 'query', 'regex', 'case_sensitive', 'pages']) }),
  },
  {
    name: 'document_to_markdown',
    title: 'Document to Markdown',
    path: '/svc/v1/document-to-markdown',
    task: true,
    description: 'Converts a PDF, office document, HTML or image (OCR) to Markdown.',
    inputSchema: object({
      ...oneDocument,
      password,
      pages,
      engine: { type: 'string', enum: ['auto', 'tesseract', 'paddle'] },
      language: { type: 'string', description: 'OCR language (tesseract code), default eng' },
    }),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['password', 'pages', 'engine', 'language']) }),
  },
  {
    name: 'ocr',
    title: 'OCR',
    path: '/svc/v1/ocr',
    task: true,
    description: 'Recognizes the text of an image or a scanned PDF, page by page.',
    inputSchema: object({
      ...oneDocument,
      password,
      pages,
      engine: { type: 'string', enum: ['auto', 'tesseract', 'paddle'] },
      language: { type: 'string', description: 'tesseract language code, default eng' },
      include_words: { type: 'boolean', description: 'word boxes in the answer (default false here)' },
    }),
    body: (a) => ({
      ...documentInput(a),
      ...pick(a, ['password', 'pages', 'engine', 'language']),
      include_words: a.include_words === true,
    }),
  },
  {
    name: 'vector_store_search',
    title: 'Search a vector store',
    path: '/v1/vector_stores/{vector_store_id}/search',
    task: false,
    description: 'Searches a vector store of the caller by meaning and keywords; returns the best matching passages with their files.',
    inputSchema: object({
      vector_store_id: { type: 'string', description: 'id of the vector store (vs_...)' },
      query: { type: 'string' },
      max_num_results: { type: 'integer', minimum: 1, maximum: 50 },
    }, ['vector_store_id', 'query']),
    pathOf: (a) => `/v1/vector_stores/${encodeURIComponent(String(a.vector_store_id ?? ''))}/search`,
    body: (a) => pick(a, ['query', 'max_num_results']),
  },
  {
    name: 'summarize',
    title: 'Summarize',
    path: '/svc/v1/summarize',
    task: true,
    description: 'Summarizes a text or a document.',
    inputSchema: object({
      ...textOrOneDocument,
      length: { type: 'string', enum: ['short', 'medium', 'long'] },
      format: { type: 'string', enum: ['prose', 'bullets'] },
      model: { type: 'string' },
    }),
    body: (a) => ({ ...textOrDocument(a), ...pick(a, ['text', 'length', 'format', 'model']) }),
  },
  {
    name: 'translate',
    title: 'Translate',
    path: '/svc/v1/translate',
    task: true,
    description: 'Translates a text or a document into a target language.',
    inputSchema: object({
      ...textOrOneDocument,
      target_language: { type: 'string', description: 'language code, e.g. "de"' },
      source_language: { type: 'string' },
      model: { type: 'string' },
    }, ['target_language']),
    body: (a) => ({
      ...textOrDocument(a),
      ...pick(a, ['text', 'target_language', 'source_language', 'model']),
    }),
  },
  {
    name: 'extract',
    title: 'Extract fields',
    path: '/svc/v1/extract',
    task: true,
    description: 'Extracts the fields of a JSON schema from a text or a document.',
    inputSchema: object({
      ...textOrOneDocument,
      schema: { type: 'object', description: 'JSON schema of the fields to extract' },
      instructions: { type: 'string' },
      model: { type: 'string' },
    }, ['schema']),
    body: (a) => ({ ...textOrDocument(a), ...pick(a, ['text', 'schema', 'instructions', 'model']) }),
  },
  {
    name: 'transcribe',
    title: 'Transcribe audio',
    path: '/svc/v1/audio-transcription',
    task: true,
    description: 'Transcribes speech in an audio or video file.',
    inputSchema: object({ ...oneDocument, language: { type: 'string' }, model: { type: 'string' } }),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['language', 'model']) }),
  },
  {
    name: 'image_convert',
    title: 'Convert an image',
    path: '/svc/v1/image-convert',
    task: true,
    description:
      'Converts an image to another format (png, jpeg, webp, avif, ...), optionally resized; the result is a file of this server.',
    inputSchema: object({
      ...oneDocument,
      format: { type: 'string' },
      quality: { type: 'number' },
      width: { type: 'integer', minimum: 1 },
      height: { type: 'integer', minimum: 1 },
    }, ['format']),
    body: (a) => ({ ...documentInput(a), ...pick(a, ['format', 'quality', 'width', 'height']), delivery: 'file_id' }),
  },
  {
    name: 'embeddings',
    title: 'Embeddings',
    path: '/v1/embeddings',
    task: true,
    description: 'Embedding vectors of one or several texts with an embedding model.',
    inputSchema: object({
      model: { type: 'string' },
      input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
      dimensions: { type: 'integer', minimum: 1 },
    }, ['model', 'input']),
    body: (a) => pick(a, ['model', 'input', 'dimensions']),
  },
  {
    name: 'chat',
    title: 'Chat / generate',
    path: '/v1/chat/completions',
    task: false,
    description: 'Generates an answer with a chat model, from a prompt or a list of messages.',
    inputSchema: object({
      model: { type: 'string' },
      prompt: { type: 'string', description: 'a single user message (used when messages is not given)' },
      system: { type: 'string' },
      messages: {
        type: 'array',
        items: { type: 'object', properties: { role: { type: 'string' }, content: { type: 'string' } }, required: ['role', 'content'] },
      },
      max_tokens: { type: 'integer', minimum: 1 },
      temperature: { type: 'number', minimum: 0, maximum: 2 },
      seed: { type: 'integer' },
    }, ['model']),
    body: (a) => ({
      model: a.model,
      messages: Array.isArray(a.messages)
        ? a.messages
        : [...(typeof a.system === 'string' ? [{ role: 'system', content: a.system }] : []), { role: 'user', content: a.prompt ?? '' }],
      ...pick(a, ['max_tokens', 'temperature', 'seed']),
    }),
  },
];

export const nativeTool = (name: string) => NATIVE_TOOLS.find((t) => t.name === name);
