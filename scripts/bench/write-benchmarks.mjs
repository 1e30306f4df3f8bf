// Replaces (or appends) one `## <title>` section of BENCHMARKS.md, so each benchmark script owns its section.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export function writeSection(title, body, file = 'BENCHMARKS.md') {
  let text = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Benchmarks\n\nEach section is written by the script it names; ratios compare against the named peer measured in the same run.\n';
  const head = `## ${title}`;
  const section = `${head}\n\n${body.trim()}\n`;
  const start = text.indexOf(`${head}\n`); // the whole heading: one title may begin another
  if (start === -1) text = `${text.trimEnd()}\n\n${section}`;
  else {
    const next = text.indexOf('\n## ', start + head.length);
    text = text.slice(0, start) + section + (next === -1 ? '' : `\n${text.slice(next + 1)}`);
  }
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}
