/**
 * The Model Context Protocol server: the native tasks as tools, skills as prompts. One server object per
 * connection (per request over Streamable HTTP, stateless); every call runs under the caller's key, through
 * the same routes a client would use (src/services/tools/tool-call.ts). Documented in docs/api/mcp.md.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { callNativeTool, type Dispatch } from '../../services/tools/tool-call.ts';
import { NATIVE_TOOLS, nativeTool } from '../../services/tools/native-tools.ts';
import { VERSION } from '../../version.ts';

/** Skills as prompts; absent until a skill store is wired. */
export interface PromptSource {
  list(): Promise<{ name: string; description?: string; arguments: { name: string; description?: string; required: boolean }[] }[]>;
  /** The rendered prompt; throws a ServiceError (400 naming the field, 404) on bad input. */
  get(
    name: string,
    args: Record<string, string>,
  ): Promise<{ description?: string; messages: { role: 'user' | 'assistant'; text: string }[] }>;
}

export interface McpServerOptions {
  dispatch: Dispatch;
  /** The caller's credentials, forwarded to every route a tool calls. */
  headers: Record<string, string>;
  prompts?: PromptSource;
}

/** File records in a result become resource links the client can fetch. */
function fileLinks(result: unknown): CallToolResult['content'] {
  const out: CallToolResult['content'] = [];
  const visit = (x: unknown) => {
    if (Array.isArray(x)) return x.forEach(visit);
    if (!x || typeof x !== 'object') return;
    const f = x as { file_id?: unknown; filename?: unknown; content_type?: unknown };
    if (typeof f.file_id === 'string') {
      out.push({
        type: 'resource_link',
        uri: `svc://files/${f.file_id}`,
        name: typeof f.filename === 'string' ? f.filename : f.file_id,
        ...(typeof f.content_type === 'string' ? { mimeType: f.content_type } : {}),
        description: `GET /svc/v1/files/${f.file_id}/content`,
      });
      return;
    }
    Object.values(x).forEach(visit);
  };
  visit(result);
  return out;
}

export function createMcpServer(o: McpServerOptions): Server {
  const server = new Server({ name: 'svc', version: VERSION }, { capabilities: { tools: {}, ...(o.prompts ? { prompts: {} } : {}) } });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: NATIVE_TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema as { type: 'object' },
    })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = nativeTool(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${req.params.name}"`);
    const token = req.params._meta?.progressToken;
    const outcome = await callNativeTool(o.dispatch, tool, req.params.arguments ?? {}, {
      headers: o.headers,
      signal: extra.signal,
      onProgress: token === undefined ? undefined : (progress, total) =>
        extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress, ...(total !== undefined ? { total } : {}) },
        }),
    });
    if (!outcome.ok) {
      // a tool failure is a result the model can read, not a protocol error
      return {
        isError: true,
        content: [{ type: 'text', text: `${outcome.status} ${outcome.reason}: ${outcome.message}` }],
        structuredContent: { status: outcome.status, error: outcome.reason, message: outcome.message },
      };
    }
    const result = outcome.result;
    const text = tool.name === 'chat' ? String((result as { content?: string }).content ?? '') : JSON.stringify(result);
    return {
      content: [{ type: 'text', text }, ...fileLinks(result)],
      ...(result && typeof result === 'object' && !Array.isArray(result) ? { structuredContent: result as Record<string, unknown> } : {}),
    };
  });

  if (o.prompts) {
    const prompts = o.prompts;
    server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: await prompts.list() }));
    server.setRequestHandler(GetPromptRequestSchema, async (req) => {
      try {
        const p = await prompts.get(req.params.name, req.params.arguments ?? {});
        return {
          ...(p.description ? { description: p.description } : {}),
          messages: p.messages.map((m) => ({ role: m.role, content: { type: 'text' as const, text: m.text } })),
        };
      } catch (e) {
        throw new McpError(ErrorCode.InvalidParams, (e as Error).message);
      }
    });
  }
  return server;
}
