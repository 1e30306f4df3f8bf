/**
 * `svc mcp`: the MCP server on stdio, for clients that start their tools as a subprocess (Claude Desktop,
 * the Inspector). It relays to the server this command reaches (started in the background when none
 * answers), so tool calls run there under SVC_API_KEY, exactly as over /mcp.
 */
import { createMcpServer } from '../routes/mcp/mcp-server.ts';
import { stdioTransport } from '../runtime/mcp-stdio.ts';
import type { CommandContext } from './models.ts';

export async function mcp(ctx: CommandContext): Promise<number> {
  const { client } = ctx;
  const server = createMcpServer({
    dispatch: (path, init) => fetch(client.base + path, init),
    headers: client.headers(),
  });
  const { transport, closed } = stdioTransport();
  await server.connect(transport);
  await closed;
  await server.close();
  return 0;
}
