/**
 * The client commands (`svc pull|run|list|ps|show|rm|cp|create|stop|ocr|md|pdf|transcribe`): they talk to
 * a running server and start one in the background when none answers. Exit codes: 0 done, 1 the server
 * refused or failed (its reason printed in one line), 2 usage, 3 no server could be reached or started.
 */
import { ConfigError, loadConfig, settings } from '../config.ts';
import { envVars } from '../runtime/env.ts';
import { writeErr } from '../runtime/process.ts';
import { parseCliWords, UsageError } from './args.ts';
import { ConnectError, ServerError, SvcClient } from './client.ts';
import { create } from './create.ts';
import { type CommandContext, cp, list, ps, pull, rm, show, stop } from './models.ts';
import { printError } from './output.ts';
import { run } from './run.ts';
import { md, ocr, pdf, transcribe } from './tasks.ts';
import { mcp } from './mcp.ts';

const COMMANDS: Record<string, (ctx: CommandContext) => Promise<number>> = {
  pull,
  run,
  list,
  ls: list,
  ps,
  show,
  rm,
  cp,
  create,
  stop,
  ocr,
  md,
  pdf,
  transcribe,
  mcp,
};

export const isClientCommand = (word: string | undefined): boolean => word !== undefined && word in COMMANDS;

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const SERVER_FLAGS = new Set(Object.keys(settings).map(kebab));

export const CLIENT_HELP = `client commands (they reach the server at --host/--port, SVC_HOST/SVC_PORT, with the key in SVC_API_KEY,
and start one in the background when none answers):
  svc pull <model>                     download a model, with progress
  svc run <model> [prompt]             chat (interactive without a prompt; stdin is read when piped)
        [--format json] [--system <text>] [--hidethinking]
  svc list | ps | show <model> | rm <model> | cp <src> <dst> | stop <model>
  svc create <name> -f <Modelfile> [-q q8|q4]
  svc ocr <file> [-o out.txt]          svc md <document> [-o out.md]
  svc pdf <operation> <files…> [--option value …] -o <out>   (merge, split, info, to-images, …)
  svc transcribe <audio> [--model whisper:tiny] [--response-format text|srt|vtt|json]
  svc mcp                              the MCP server on stdio (tools run on the server, under SVC_API_KEY)
  --json prints the server's raw answer; --no-start never starts a server.`;

export async function runClientCommand(argv: string[]): Promise<number> {
  try {
    const { positional, flags } = parseCliWords(argv);
    const [name, ...words] = positional;
    const serverFlags = new Map([...flags].filter(([k]) => SERVER_FLAGS.has(k)));
    const config = loadConfig(serverFlags, envVars());
    const client = new SvcClient(config, envVars().SVC_API_KEY || undefined);
    await client.ensureServer({
      start: !flags.has('no-start'),
      onStart: (log) => writeErr(`starting a server in the background (log: ${log})\n`),
    });
    return await COMMANDS[name!]!({
      client,
      json: flags.has('json'),
      words,
      flags: new Map([...flags].filter(([k]) => !SERVER_FLAGS.has(k))),
    });
  } catch (e) {
    if (e instanceof UsageError || e instanceof ConfigError) {
      printError(e.message);
      return 2;
    }
    if (e instanceof ConnectError) {
      printError(e.message);
      return 3;
    }
    if (e instanceof ServerError) {
      printError(e.message);
      return 1;
    }
    printError((e as Error).message ?? String(e));
    return 1;
  }
}
