/** The MCP stdio transport over this process's stdin/stdout (all three runtimes expose node:process). */
import process from 'node:process';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

export function stdioTransport(): { transport: StdioServerTransport; closed: Promise<void> } {
  const transport = new StdioServerTransport(process.stdin, process.stdout);
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
  });
  return { transport, closed };
}
