/**
 * Tools of external MCP servers registered by the operator (setting mcp-servers: name=url), reached over
 * Streamable HTTP with the official SDK client, every request through the server tools' egress policy.
 * A connection lives for one call or one listing: servers stay stateless from our side.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ServiceError } from '../errors.ts';
import type { ToolEgress } from './egress-fetch.ts';

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export class McpServers {
  readonly servers = new Map<string, URL>();

  constructor(entries: readonly string[], private readonly egress: ToolEgress) {
    for (const e of entries) {
      const i = e.indexOf('=');
      const name = e.slice(0, i);
      const url = new URL(e.slice(i + 1));
      // a registration the policy forbids could never work: refuse it when the server starts
      if (!egress.policy.allows(url.host)) throw new Error(`mcp-servers: ${name}'s host ${url.host} is not allowed by tool-allowed-hosts`);
      this.servers.set(name, url);
    }
  }

  async #with<T>(server: string, signal: AbortSignal | undefined, f: (c: Client) => Promise<T>): Promise<T> {
    const url = this.servers.get(server);
    if (!url) throw new ServiceError(400, 'invalid_request', `server_tools: unknown MCP server "${server}"`);
    const client = new Client({ name: 'svc', version: '1' });
    const transport = new StreamableHTTPClientTransport(url, { fetch: this.egress.fetch });
    try {
      await client.connect(transport, { signal });
      return await f(client);
    } finally {
      await client.close().catch(() => {});
    }
  }

  async listTools(server: string, signal?: AbortSignal): Promise<McpToolInfo[]> {
    try {
      return await this.#with(server, signal, async (c) => (await c.listTools(undefined, { signal })).tools as McpToolInfo[]);
    } catch (e) {
      if (e instanceof ServiceError) throw e;
      throw new ServiceError(502, 'mcp_server_unavailable', `MCP server "${server}" could not list its tools: ${(e as Error).message}`);
    }
  }

  /** The tool's text content (and structured content when given); a tool error is an outcome, not a throw. */
  async callTool(server: string, tool: string, args: Record<string, unknown>, signal?: AbortSignal) {
    return this.#with(server, signal, async (c) => {
      const r = await c.callTool({ name: tool, arguments: args }, undefined, { signal });
      const content = (r.content as { type: string; text?: string }[] | undefined) ?? [];
      const text = content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
      return { isError: r.isError === true, text, structured: r.structuredContent };
    });
  }
}
