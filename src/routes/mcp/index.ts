/**
 * POST/GET/DELETE /mcp: the MCP server over Streamable HTTP, stateless (a fresh server and transport per
 * request, so any node of a fleet can answer). Authentication has already run: the caller's credentials
 * are forwarded to the routes its tool calls reach.
 */
import { Hono } from 'hono';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { AppEnv } from '../../http/context.ts';
import type { Dispatch } from '../../http/tool-call.ts';
import { createMcpServer, type PromptSource } from './mcp-server.ts';
import type { Owner } from '../../services/keys/api-keys.ts';

export function mcpRoutes(dispatch: Dispatch, promptsFor?: (owner: Owner) => PromptSource) {
  const app = new Hono<AppEnv>();
  app.all('/mcp', async (c) => {
    const headers: Record<string, string> = {};
    for (const h of ['authorization', 'x-api-key']) {
      const v = c.req.header(h);
      if (v) headers[h] = v;
    }
    const server = createMcpServer({ dispatch, headers, prompts: promptsFor?.(c.get('owner')) });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    return transport.handleRequest(c.req.raw);
  });
  return app;
}
