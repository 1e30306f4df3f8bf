/**
 * Command-line words of the client commands: positionals, `--flag value`, `--flag=value`, boolean flags and
 * the short forms `-o`, `-f`, `-q`. Server settings among them (`--port`, `--host`, …) are picked out by
 * the caller and go through the one config schema.
 */
const SHORT: Record<string, string> = { o: 'output', f: 'file', q: 'quantize', h: 'help', v: 'version' };
const BOOLEAN = new Set(['json', 'help', 'version', 'insecure', 'verbose', 'no-start', 'think', 'hidethinking', 'force', 'nowordwrap']);

export interface CliWords {
  positional: string[];
  flags: Map<string, string>;
}

export function parseCliWords(argv: string[]): CliWords {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    const long = /^--([a-z0-9][a-z0-9-]*)(?:=(.*))?$/s.exec(a);
    const short = /^-([a-z])$/.exec(a);
    const name = long ? long[1]! : short ? SHORT[short[1]!] ?? short[1]! : null;
    if (name === null) {
      positional.push(a);
      continue;
    }
    if (long?.[2] !== undefined) flags.set(name, long[2]);
    else if (BOOLEAN.has(name)) flags.set(name, 'true');
    else if (i + 1 < argv.length) flags.set(name, argv[++i]!);
    else throw new UsageError(`option ${a} needs a value`);
  }
  return { positional, flags };
}

/** A command used wrongly: exit code 2 with a one-line message. */
export class UsageError extends Error {}
