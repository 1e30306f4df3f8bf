/**
 * Ollama's Modelfile, read into an `/api/create` request: FROM (a model name, or a local weights file or
 * directory that is pushed as blobs), PARAMETER, SYSTEM, TEMPLATE, ADAPTER, LICENSE, MESSAGE.
 * Instructions are case-insensitive; values may be quoted with `"""` across lines.
 */
import { UsageError } from './args.ts';

export interface Modelfile {
  from?: string;
  parameters: Record<string, unknown>;
  system?: string;
  template?: string;
  license?: string[];
  adapters: string[];
  messages: { role: string; content: string }[];
}

const NUMERIC = /^-?\d+(\.\d+)?$/;

export function parseModelfile(text: string): Modelfile {
  const mf: Modelfile = { parameters: {}, adapters: [], messages: [] };
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(line);
    if (!m) throw new UsageError(`Modelfile line ${i + 1}: expected an instruction and a value`);
    const instr = m[1]!.toUpperCase();
    let value = m[2]!;
    if (value.startsWith('"""')) {
      // a value quoted with """ may span lines
      let rest = value.slice(3);
      const parts: string[] = [];
      while (!rest.includes('"""')) {
        parts.push(rest);
        if (++i >= lines.length) throw new UsageError('Modelfile: unterminated """');
        rest = lines[i]!;
      }
      parts.push(rest.slice(0, rest.indexOf('"""')));
      value = parts.join('\n');
    } else if (/^".*"$/s.test(value)) value = value.slice(1, -1);
    switch (instr) {
      case 'FROM':
        mf.from = value.trim();
        break;
      case 'SYSTEM':
        mf.system = value;
        break;
      case 'TEMPLATE':
        mf.template = value;
        break;
      case 'LICENSE':
        (mf.license ??= []).push(value);
        break;
      case 'ADAPTER':
        mf.adapters.push(value.trim());
        break;
      case 'MESSAGE': {
        const mm = /^(system|user|assistant)\s+([\s\S]*)$/i.exec(value);
        if (!mm) throw new UsageError(`Modelfile line ${i + 1}: MESSAGE takes a role (system, user, assistant) and a text`);
        mf.messages.push({ role: mm[1]!.toLowerCase(), content: mm[2]! });
        break;
      }
      case 'PARAMETER': {
        const pm = /^(\S+)\s+([\s\S]+)$/.exec(value);
        if (!pm) throw new UsageError(`Modelfile line ${i + 1}: PARAMETER takes a name and a value`);
        const [, name, raw] = pm as unknown as [string, string, string];
        const v = raw.trim().replace(/^"(.*)"$/s, '$1');
        // stop may repeat; every other parameter is a number, a boolean or a word
        if (name === 'stop') {
          (mf.parameters.stop as string[] | undefined ?? (mf.parameters.stop = [])) && (mf.parameters.stop as string[]).push(v);
        } else mf.parameters[name] = NUMERIC.test(v) ? Number(v) : v === 'true' || v === 'false' ? v === 'true' : v;
        break;
      }
      default:
        throw new UsageError(`Modelfile line ${i + 1}: unknown instruction ${instr}`);
    }
  }
  if (!mf.from) throw new UsageError('Modelfile: FROM is required');
  return mf;
}
