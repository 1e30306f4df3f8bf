/**
 * Server tools: tools the server runs itself inside a chat turn. A request (or an agent) names them in
 * `server_tools`: any native tool (native-tools.ts: the very route a client would call, under the
 * caller's key), `fetch_url` (a GET through the egress policy), `mcp:<server>` (every tool of a
 * registered MCP server) or `mcp:<server>/<tool>`. Each becomes a function tool the model sees; a call
 * is run here and its result (or error) becomes a tool message. Rules in docs/api/agents.md.
 */
import { callNativeTool, type Dispatch, type ToolOutcome } from './tool-call.ts';
import { ServiceError } from '../errors.ts';
import type { ToolEgress } from './egress-fetch.ts';
import type { McpServers } from './mcp-client.ts';
import { type JsonSchema, NATIVE_TOOLS, nativeTool } from './native-tools.ts';

export interface ToolRunContext {
  dispatch: Dispatch;
  /** The caller's credentials, forwarded to the routes the native tools reach. */
  headers: Record<string, string>;
  signal?: AbortSignal;
}

export interface ServerTool {
  /** The function name the model sees. */
  name: string;
  description: string;
  parameters: JsonSchema;
  run(args: Record<string, unknown>, ctx: ToolRunContext): Promise<ToolOutcome>;
  /** Arguments fixed by the request or agent (they win over the model's). */
  bound?: Record<string, unknown>;
}

/** The most bytes fetch_url reads from a page. */
const FETCH_MAX_BYTES = 256 * 1024;

const bad = (message: string) =>
  new ServiceError(400, 'invalid_request', `server_tools: ${message}`, { details: [{ field: 'server_tools', message }] });

const asOutcome = (e: unknown): ToolOutcome =>
  e instanceof ServiceError
    ? { ok: false, status: e.status, reason: e.reason, message: e.message }
    : { ok: false, status: 502, reason: 'tool_failed', message: (e as Error)?.message ?? String(e) };

/**
 * A tool with some arguments fixed by the request or agent (`{"name":"vector_store_search",
 * "vector_store_id":"vs_…"}`): they leave the schema the model sees and always win over the model's.
 */
function bind(tool: ServerTool, bound: Record<string, unknown>): ServerTool {
  const p = tool.parameters as { properties?: Record<string, unknown>; required?: string[] };
  const props = p.properties ?? {};
  for (const k of Object.keys(bound)) if (!(k in props)) throw bad(`"${k}" is not an argument of ${tool.name}`);
  const properties = Object.fromEntries(Object.entries(props).filter(([k]) => !(k in bound)));
  const required = (p.required ?? []).filter((k) => !(k in bound));
  return {
    ...tool,
    bound,
    parameters: { ...tool.parameters, properties, ...(required.length ? { required } : { required: undefined }) },
    run: (args, ctx) => tool.run({ ...args, ...bound }, ctx),
  };
}

export class ServerToolCatalog {
  constructor(private readonly egress: ToolEgress, private readonly mcp: McpServers) {}

  /** Every name a request may give (MCP servers as `mcp:<server>`). */
  names(): string[] {
    return [...NATIVE_TOOLS.map((t) => t.name), 'fetch_url', ...[...this.mcp.servers.keys()].map((s) => `mcp:${s}`)];
  }

  /** The named tools, in order; an unknown name is a 400 naming it. */
  async resolve(raw: unknown, signal?: AbortSignal): Promise<ServerTool[]> {
    if (raw === undefined || raw === null) return [];
    if (!Array.isArray(raw)) throw bad('must be an array of server tool names');
    const out = new Map<string, ServerTool>();
    for (const t of raw) {
      const name = typeof t === 'string' ? t : (t as { name?: unknown })?.name;
      if (typeof name !== 'string' || !name) throw bad('each entry must be a name (or an object with a name)');
      const { name: _n, ...bound } = typeof t === 'object' ? (t as Record<string, unknown>) : {};
      for (const tool of await this.#one(name, signal)) out.set(tool.name, Object.keys(bound).length ? bind(tool, bound) : tool);
    }
    return [...out.values()];
  }

  async #one(name: string, signal?: AbortSignal): Promise<ServerTool[]> {
    const native = nativeTool(name);
    if (native) {
      return [{
        name,
        description: native.description,
        parameters: native.inputSchema,
        run: (args, ctx) => callNativeTool(ctx.dispatch, native, args, { headers: ctx.headers, signal: ctx.signal }),
      }];
    }
    if (name === 'fetch_url') {
      return [{
        name,
        description: 'Fetches a web page or document by URL (only hosts the operator allows) and returns its text (HTML as Markdown).',
        parameters: {
          type: 'object',
          properties: { url: { type: 'string', description: 'absolute http(s) URL' } },
          required: ['url'],
          additionalProperties: false,
        },
        run: async (args, ctx) => {
          try {
            const page = await this.egress.fetchText(String(args.url ?? ''), FETCH_MAX_BYTES, ctx.signal);
            // HTML reaches the model as Markdown: the text without the markup that would fill its context
            if (/html/i.test(page.content_type)) {
              const { htmlToMarkdown } = await import('../documents/office.ts');
              return { ok: true, result: { ...page, text: await htmlToMarkdown(page.text), format: 'markdown' } };
            }
            return { ok: true, result: { ...page, format: 'text' } };
          } catch (e) {
            return asOutcome(e);
          }
        },
      }];
    }
    const m = /^mcp:([A-Za-z0-9_-]+)(?:\/(.+))?$/.exec(name);
    if (m) {
      const [, server, only] = m as unknown as [string, string, string | undefined];
      if (!this.mcp.servers.has(server)) {
        throw bad(`unknown MCP server "${server}" (registered: ${[...this.mcp.servers.keys()].join(', ') || 'none'})`);
      }
      const listed = await this.mcp.listTools(server, signal);
      const chosen = only ? listed.filter((t) => t.name === only) : listed;
      if (only && !chosen.length) throw bad(`MCP server "${server}" has no tool "${only}"`);
      return chosen.map((t) => ({
        // function names allow letters, digits, _ and -: server and tool joined by "__"
        name: `${server}__${t.name}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64),
        description: t.description ?? `${t.name} (MCP server ${server})`,
        parameters: t.inputSchema ?? { type: 'object' },
        run: async (args, ctx) => {
          try {
            const r = await this.mcp.callTool(server, t.name, args, ctx.signal);
            return r.isError
              ? { ok: false, status: 502, reason: 'tool_error', message: r.text || 'the MCP tool reported an error' }
              : { ok: true, result: r.structured ?? r.text };
          } catch (e) {
            return asOutcome(e);
          }
        },
      }));
    }
    throw bad(`unknown server tool "${name}"`);
  }
}
