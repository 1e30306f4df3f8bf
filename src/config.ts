/**
 * Every setting of the server, in one valibot schema.
 * Sources, later wins: defaults < SVC_* environment variables < CLI flags (--kebab-case).
 * Invalid values fail at start with a message naming the setting.
 */
import * as v from 'valibot';
import { homeDir } from './runtime/env.ts';

type Kind = 'int' | 'bool' | 'string' | 'list' | 'number';

interface Setting<T> {
  kind: Kind;
  schema: v.GenericSchema<T>;
  default: T | (() => T);
  help: string;
}

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
const s = <T>(kind: Kind, schema: v.GenericSchema<T>, def: T | (() => T), help: string): Setting<T> => ({
  kind,
  schema,
  default: def,
  help,
});

export const settings = {
  port: s('int', int(0, 65535), 8090, 'TCP port to listen on (0 picks a free port)'),
  host: s('string', v.pipe(v.string(), v.minLength(1)), '127.0.0.1', 'address to listen on; 0.0.0.0 exposes the server to the network'),
  dataDir: s(
    'string',
    v.pipe(v.string(), v.minLength(1)),
    () => `${homeDir()}/.svc`,
    'data directory (database, uploads, models); created on first start',
  ),
  databaseUrl: s(
    'string',
    v.string(),
    '',
    'database URL: libSQL (file:, libsql://, http(s)://) or PostgreSQL (postgres://); empty = file:<data-dir>/svc.db',
  ),
  databaseAuthToken: s('string', v.string(), '', 'auth token for a remote libSQL/Turso database'),
  requireKeys: s('bool', v.boolean(), false, 'require an API key on every route even while no key exists'),
  logLevel: s(
    'string',
    v.picklist(['debug', 'info', 'warn', 'error', 'silent']),
    'info',
    'log level; info writes one access-log line per request',
  ),
  maxUploadBytes: s('int', int(1), 100 * 1024 * 1024, 'maximum request body / upload size in bytes (413 above it)'),
  fileRetentionSeconds: s('int', int(1), 24 * 3600, 'how long uploaded files are kept'),
  jobRetentionSeconds: s('int', int(1), 3600, 'how long a finished job record is kept'),
  maxJobsPerOwner: s('int', int(1), 100, 'in-flight task ceiling per API key (MaxJobsPerOwner); 429 above it'),
  modelsDir: s('string', v.string(), '', 'model directory; empty = <data-dir>/models'),
  modelWorkDir: s(
    'string',
    v.string(),
    '',
    'writable work directory: when the model directory is read-only, models run from here (its files mirrored as symlinks) and imports land here',
  ),
  backend: s('string', v.picklist(['auto', 'cpu', 'wasm', 'webgpu', 'cuda']), 'auto', 'inference backend'),
  threads: s('int', int(0, 256), 1, 'intra-op threads per inference session (0 = runtime default)'),
  hubUrl: s('string', v.pipe(v.string(), v.url()), 'https://huggingface.co', 'model hub base URL (a mirror or a local stand-in)'),
  hubAllowedHosts: s(
    'list',
    v.array(v.string()),
    ['huggingface.co', 'hf.co'],
    'egress policy: model hub hosts that pulls may reach (comma separated)',
  ),
  maxLoadedModels: s('int', int(1), 3, 'most models resident at once (least recently used idle model is evicted)'),
  memoryBudgetBytes: s('int', int(0), 0, 'memory budget for resident models in bytes (0 = no budget)'),
  slotsPerModel: s('int', int(1), 1, 'concurrent generations per model: the batch capacity (they decode together in shared steps)'),
  saturationPolicy: s(
    'string',
    v.picklist(['Queue', 'Reject']),
    'Queue',
    'when every slot is busy: Queue waits, Reject answers 503 with Retry-After: 1',
  ),
  idleDeviceMemoryReleaseSeconds: s('int', int(0), 300, 'Inference:IdleDeviceMemoryReleaseSeconds; 0 never'),
  keepAliveSeconds: s('int', int(-1), 300, 'default keep_alive of a loaded model (-1 forever)'),
  ffmpegPath: s(
    'string',
    v.string(),
    'ffmpeg',
    'system ffmpeg for audio/video (ffprobe is looked up beside it); empty = never use a system ffmpeg',
  ),
  ffmpegWasm: s('bool', v.boolean(), true, "decode media with ffmpeg's WASM build when no system ffmpeg is found"),
  trainingMemoryWaitSeconds: s('int', int(0), 600, 'a training job refused for device memory waits this long before failing'),
  pdfTrustAllowedHosts: s(
    'list',
    v.array(v.string()),
    [],
    'egress policy of PDF signing and verification: hosts that TSA, OCSP and CRL requests may reach (comma separated; empty = none)',
  ),
  pdfTrustAnchors: s('string', v.string(), '', 'PEM file of certificates that pdf-verify trusts in addition to those a request gives'),
  textModel: s(
    'string',
    v.pipe(v.string(), v.minLength(1)),
    'qwen2.5:0.5b',
    'chat model of the text tasks (summarize, translate, rewrite, correct, extract, categorize) when a request names none',
  ),
  defaultEmbeddingModel: s(
    'string',
    v.string(),
    '',
    'embedding model of vector stores that name none (admin setting default_embedding_model overrides it); empty = none',
  ),
  maxImagePixels: s(
    'int',
    int(1),
    268_402_689,
    'most pixels an image page may declare (width × height, read from its header before decoding); 413 input_too_large above it',
  ),
  imageBackgroundModel: s(
    'string',
    v.string(),
    '',
    'background-removal model: a local hub-layout ONNX directory (MODNet, ISNet, BiRefNet); empty = the route answers 501',
  ),
  workers: s('int', int(0, 256), 0, 'worker threads for heavy work (PDF, images, OCR, documents); 0 = the core count'),
  workerHeapMb: s('int', int(64), 2048, 'heap ceiling of one worker thread in MiB (Node); a task over it gets 422 memory_limit_exceeded'),
  workerRecycleMb: s('int', int(16), 512, 'a worker holding more memory than this after a task is replaced, giving the memory back'),
  taskDeadlineSeconds: s(
    'int',
    int(1),
    300,
    'wall-clock deadline of one heavy task; over it: 422 deadline_exceeded and the worker is replaced',
  ),
  maxPdfStreamBytes: s(
    'int',
    int(1),
    256 * 1024 * 1024,
    'decompressed bytes of one PDF stream; over it: 422 decompressed_size_limit_exceeded',
  ),
  maxPdfDecompressedBytes: s(
    'int',
    int(1),
    1024 * 1024 * 1024,
    'decompressed bytes of all streams of one PDF; over it: 422 decompressed_size_limit_exceeded',
  ),
  maxPages: s('int', int(1), 5000, 'pages of one document; over it: 422 too_many_pages'),
  maxFieldChars: s(
    'int',
    int(1),
    10_000,
    'characters of one text field of a task request (password, query, text); over it: 413 field_too_long',
  ),
  maxJsonDepth: s('int', int(2), 64, 'nesting depth of a JSON schema or tool parameters; over it: 422 json_too_deep'),
  maxPromptChars: s(
    'int',
    int(1),
    2_000_000,
    'characters of a prompt or embedding input, counted before tokenization; over it: 413 input_too_large',
  ),
  allowAnonymousRemote: s(
    'bool',
    v.boolean(),
    false,
    'serve without keys on a non-loopback host (anyone who can reach it is admin); off: keys are required there',
  ),
  toolAllowedHosts: s(
    'list',
    v.array(v.string()),
    [],
    'egress policy of server tools: hosts that the fetch_url tool and registered MCP servers may reach (comma separated, subdomains included; empty = none)',
  ),
  mcpServers: s(
    'list',
    v.array(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,32}=https?:\/\/\S+$/, 'each entry must be name=http(s)://url'))),
    [],
    'external MCP servers (Streamable HTTP) whose tools agents may use: name=url pairs, comma separated; each host must pass tool-allowed-hosts',
  ),
  chatImageAllowedHosts: s(
    'list',
    v.array(v.string()),
    [],
    'egress policy of chat images: hosts an http(s) image URL may name (comma separated, subdomains included); empty = image URLs refused with 403 egress_denied, data URLs and base64 only',
  ),
  fleet: s(
    'bool',
    v.boolean(),
    false,
    'this node is one of a fleet sharing the database (always so on PostgreSQL): heartbeats, job_lost takeover, ceiling divided by live nodes, svc-node cookie (docs/fleet.md)',
  ),
  fleetHeartbeatSeconds: s('int', int(1, 3600), 5, 'how often a fleet node writes its heartbeat into the database'),
  fleetNodeTimeoutSeconds: s(
    'int',
    int(2, 86_400),
    15,
    'a fleet node not seen for this long is dead: the survivors fail its processing jobs with job_lost',
  ),
  nodeTag: s(
    'string',
    v.union([v.literal(''), v.pipe(v.string(), v.regex(/^[a-z0-9]{6}$/, 'six lowercase letters or digits'))]),
    '',
    "this node's tag, fixed, for a fleet whose balancer maps tags to addresses (deploy/nginx.conf); empty = generated once and kept in the data directory",
  ),
  filesDir: s(
    'string',
    v.string(),
    '',
    'directory of uploaded file bytes; on a fleet, one directory every node mounts (a shared volume); empty = <data-dir>/uploads',
  ),
  corsOrigins: s(
    'list',
    v.array(v.string()),
    [
      'http://localhost',
      'https://localhost',
      'http://127.0.0.1',
      'https://127.0.0.1',
      'http://0.0.0.0',
      'https://0.0.0.0',
      'app://*',
      'file://*',
      'tauri://*',
      'vscode-webview://*',
      'chrome-extension://*',
      'moz-extension://*',
    ],
    'browser origins allowed to call the API (CORS), comma separated; an origin without a port allows every port, scheme://* every host of that scheme, * any origin',
  ),
  workerNice: s(
    'int',
    int(0, 19),
    10,
    'how many nice steps below the server the worker threads run (Linux): the event loop keeps its CPU while heavy work saturates the cores; 0 = the same',
  ),
} as const;

export type Settings = typeof settings;
export type Config = { [K in keyof Settings]: Settings[K] extends Setting<infer T> ? T : never };

export const configSchema = v.object(
  Object.fromEntries(Object.entries(settings).map(([k, st]) => [k, st.schema])) as { [K in keyof Settings]: Settings[K]['schema'] },
);

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const envName = (k: string) => `SVC_${k.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

export class ConfigError extends Error {}

function coerce(kind: Kind, raw: string): unknown {
  switch (kind) {
    case 'int':
    case 'number':
      return raw.trim() === '' ? Number.NaN : Number(raw);
    case 'bool':
      if (/^(1|true|yes|on)$/i.test(raw)) return true;
      if (/^(0|false|no|off)$/i.test(raw)) return false;
      return raw; // left as a string so validation names the setting
    case 'list':
      return raw.split(',').map((x) => x.trim()).filter(Boolean);
    default:
      return raw;
  }
}

/** Parses `--flag value`, `--flag=value` and boolean `--flag`; returns the flags and the positional words. */
export function parseArgs(argv: string[]): { flags: Map<string, string>; positional: string[] } {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') continue; // `npm start -- --port 1` style separators
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) flags.set(a.slice(2, eq), a.slice(eq + 1));
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) flags.set(a.slice(2), argv[++i]);
      else flags.set(a.slice(2), 'true');
    } else positional.push(a);
  }
  return { flags, positional };
}

/** Builds the config; throws ConfigError naming the setting when a value is invalid. */
export function loadConfig(flags: Map<string, string>, env: Record<string, string | undefined>): Config {
  const known = new Set(Object.keys(settings).map(kebab));
  for (const f of flags.keys()) {
    if (!known.has(f) && f !== 'help') throw new ConfigError(`unknown option --${f} (see --help)`);
  }
  const raw: Record<string, unknown> = {};
  for (const [k, st] of Object.entries(settings)) {
    const fromFlag = flags.get(kebab(k));
    const fromEnv = env[envName(k)];
    const src = fromFlag ?? fromEnv;
    raw[k] = src === undefined ? (typeof st.default === 'function' ? (st.default as () => unknown)() : st.default) : coerce(st.kind, src);
  }
  const result = v.safeParse(configSchema, raw);
  if (!result.success) {
    const issue = result.issues[0];
    const key = String(issue.path?.[0]?.key ?? '');
    throw new ConfigError(`invalid setting ${key} (--${kebab(key)} / ${envName(key)}): ${issue.message}`);
  }
  return result.output as Config;
}

export function helpText(): string {
  const rows = Object.entries(settings).map(([k, st]) => {
    const def = typeof st.default === 'function' ? (st.default as () => unknown)() : st.default;
    return `  --${kebab(k)} <${st.kind}>\n      ${envName(k)}  ${st.help} (default: ${JSON.stringify(def)})`;
  });
  return [
    'svc: one local server for models, documents and search',
    '',
    'usage: svc [serve] [options]',
    '       svc keys create --name <name> [--role admin|user]',
    '       svc keys list',
    '       svc keys revoke <key-id>',
    '',
    'options (each also read from its SVC_* environment variable):',
    ...rows,
    '  --help\n      print this help',
  ].join('\n');
}

/** Derived paths, so no module builds them by hand. */
export const dbUrl = (c: Config) => c.databaseUrl || `file:${c.dataDir}/svc.db`;
export const modelsDir = (c: Config) => c.modelsDir || `${c.dataDir}/models`;
export const uploadsDir = (c: Config) => c.filesDir || `${c.dataDir}/uploads`;
export const isFleetMember = (c: Config) => c.fleet || /^postgres(ql)?:\/\//i.test(c.databaseUrl);

/** Whether the listen address is reachable only from this machine (127.0.0.0/8, ::1, localhost). */
export const isLoopbackHost = (host: string) => /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i.test(host.trim());
/** Keys are required when the operator says so, or off loopback unless anonymous remote use was allowed (docs/auth.md). */
export const keysRequiredByConfig = (c: Config) => c.requireKeys || (!isLoopbackHost(c.host) && !c.allowAnonymousRemote);
