/**
 * Ground-truth documents for the document-understanding corpus. Each is a list of blocks; the same blocks
 * are written as HTML (rendered to PDF by Chromium) and as Markdown (the truth the scorer compares with),
 * so the truth is known by construction.
 */
export type Block =
  | { kind: 'h'; level: number; text: string }
  | { kind: 'p'; text: string }
  | { kind: 'ul' | 'ol'; items: string[] }
  | { kind: 'code'; lines: string[] }
  | { kind: 'table'; rows: string[][] };

export interface SourceDoc {
  name: string;
  /** running header and footer text repeated on every page (the footer also carries the page number) */
  header?: string;
  footer?: string;
  columns?: number;
  justify?: boolean;
  blocks: Block[];
}

const SENTENCES = [
  'Creates a file that contains the definitions of every function in the library, one per line.',
  'The generator reads the configuration, resolves each dependency and writes the result atomically.',
  'When a vector is passed by reference, the callee may change its length but never its element type.',
  'Every command accepts a verbose flag that prints the intermediate representation before it is compiled.',
  'Unified system tables keep the mapping between names and addresses, so that lookups stay constant in time.',
  'A signal handler installed by the runtime restores the previous handler once the child process has exited.',
  'Large inputs are streamed to disk in fixed-size chunks and hashed while they are written.',
  'The scheduler prefers the oldest waiting task, which keeps latency bounded under sustained load.',
  'Numbers are formatted with the locale of the caller unless an explicit pattern is given.',
  'Each module exports one function with a short name and a documented contract.',
  'Errors carry a machine-readable reason, a status and a message meant for people.',
  'The compiler emits position-independent code by default on every supported platform.',
];

/** A deterministic paragraph of n sentences starting at sentence k. */
const para = (k: number, n: number) => Array.from({ length: n }, (_, i) => SENTENCES[(k + i * 5) % SENTENCES.length]).join(' ');

export const SOURCES: SourceDoc[] = [
  {
    name: 'manual-justified',
    header: 'Chapter 3: Utilities',
    footer: 'Programming Manual',
    justify: true,
    blocks: [
      { kind: 'h', level: 1, text: 'The Toolkit Programming Manual' },
      { kind: 'h', level: 2, text: '1. Introduction' },
      { kind: 'p', text: para(0, 5) },
      { kind: 'p', text: para(1, 4) },
      { kind: 'h', level: 3, text: '1.1 Scope of this manual' },
      { kind: 'p', text: para(2, 6) },
      { kind: 'h', level: 3, text: '1.2 Conventions' },
      { kind: 'p', text: para(3, 3) },
      { kind: 'h', level: 2, text: '2. Unified system' },
      { kind: 'p', text: para(4, 6) },
      { kind: 'h', level: 3, text: '2.1 Function tables' },
      { kind: 'p', text: para(5, 5) },
      { kind: 'p', text: para(6, 7) },
      { kind: 'h', level: 3, text: '2.2 Generated files' },
      { kind: 'p', text: para(7, 6) },
      { kind: 'h', level: 2, text: '3. Utilities' },
      { kind: 'p', text: para(8, 8) },
      { kind: 'p', text: para(9, 5) },
      { kind: 'h', level: 3, text: '3.1 Command line' },
      { kind: 'p', text: para(10, 7) },
      { kind: 'p', text: para(11, 6) },
    ],
  },
  {
    name: 'programming-code',
    header: 'Library Reference',
    footer: 'Reference Guide',
    blocks: [
      { kind: 'h', level: 1, text: 'Vector Library Reference' },
      { kind: 'h', level: 2, text: '1. Getting started' },
      { kind: 'p', text: para(2, 3) },
      { kind: 'code', lines: ['$ make install PREFIX=/usr/local', '$ vecgen --output defs.h input.txt'] },
      { kind: 'p', text: para(4, 2) },
      { kind: 'h', level: 3, text: '1.1 A first program' },
      { kind: 'p', text: para(6, 2) },
      {
        kind: 'code',
        lines: [
          '#include <vec.h>',
          '',
          'int main(void) {',
          '    vec_t *v = vec_new(16);',
          '    vec_push(v, 42);',
          '    return vec_len(v) == 1 ? 0 : 1;',
          '}',
        ],
      },
      { kind: 'p', text: para(7, 3) },
      { kind: 'h', level: 2, text: '2. Functions' },
      {
        kind: 'table',
        rows: [['Function', 'Arguments', 'Returns'], ['vec_new', 'capacity', 'vector'], ['vec_push', 'vector, value', 'status'], [
          'vec_len',
          'vector',
          'length',
        ], ['vec_free', 'vector', 'nothing']],
      },
      { kind: 'p', text: para(8, 3) },
      { kind: 'h', level: 3, text: '2.1 Error handling' },
      { kind: 'ul', items: ['Every function returns a status code', 'Status zero means success', 'Negative codes name the failure'] },
      { kind: 'code', lines: ['if (vec_push(v, x) < 0) {', '    perror("vec_push");', '}'] },
      { kind: 'p', text: para(10, 4) },
    ],
  },
  {
    name: 'report-two-columns',
    header: 'Quarterly Engineering Report',
    footer: 'Internal',
    columns: 2,
    blocks: [
      { kind: 'h', level: 1, text: 'Quarterly Engineering Report' },
      { kind: 'h', level: 2, text: 'Summary' },
      { kind: 'p', text: para(0, 4) },
      { kind: 'h', level: 2, text: 'Infrastructure' },
      { kind: 'p', text: para(3, 5) },
      { kind: 'ol', items: ['Storage moved to the new cluster', 'Backups run every hour', 'Restores were tested twice'] },
      { kind: 'h', level: 2, text: 'Performance' },
      { kind: 'p', text: para(5, 6) },
      { kind: 'h', level: 2, text: 'Outlook' },
      { kind: 'p', text: para(9, 5) },
      { kind: 'p', text: para(1, 6) },
      { kind: 'h', level: 2, text: 'Staffing' },
      { kind: 'p', text: para(2, 7) },
      { kind: 'ol', items: ['Two engineers joined the storage team', 'One engineer moved to tooling'] },
      { kind: 'p', text: para(6, 6) },
      { kind: 'h', level: 2, text: 'Risks' },
      { kind: 'p', text: para(7, 8) },
      { kind: 'p', text: para(4, 7) },
    ],
  },
];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** HTML for Chromium: running header/footer and page numbers as CSS page-margin boxes. */
export function toHtml(d: SourceDoc): string {
  const body = d.blocks.map((b) => {
    switch (b.kind) {
      case 'h':
        return `<h${b.level}>${esc(b.text)}</h${b.level}>`;
      case 'p':
        return `<p>${esc(b.text)}</p>`;
      case 'ul':
      case 'ol':
        return `<${b.kind}>${b.items.map((i) => `<li>${esc(i)}</li>`).join('')}</${b.kind}>`;
      case 'code':
        return `<pre><code>${esc(b.lines.join('\n'))}</code></pre>`;
      case 'table':
        return `<table><thead><tr>${b.rows[0]!.map((c) => `<th>${esc(c)}</th>`).join('')}</tr></thead><tbody>${
          b.rows.slice(1).map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')
        }</tbody></table>`;
    }
  }).join('\n');
  const css = `
  @page { size: A4; margin: 25mm 20mm; }
  body { font-family: 'DejaVu Serif', serif; font-size: 10.5pt; line-height: 1.35; ${
    d.justify ? 'text-align: justify; hyphens: none;' : ''
  } }
  main { ${d.columns ? `column-count: ${d.columns}; column-gap: 10mm;` : ''} }
  h1 { font-size: 22pt; column-span: all; } h2 { font-size: 15pt; } h3 { font-size: 12pt; }
  pre { font-family: 'DejaVu Sans Mono', monospace; font-size: 9pt; text-align: left; }
  table { border-collapse: collapse; } td, th { border: 0.5pt solid #000; padding: 2pt 8pt; text-align: left; }
  ${d.header ? `@page { @top-left { content: "${d.header}"; font: italic 8pt 'DejaVu Serif'; } }` : ''}
  ${
    d.footer
      ? `@page { @bottom-left { content: "${d.footer}"; font: 8pt 'DejaVu Serif'; } @bottom-right { content: counter(page); font: 8pt 'DejaVu Serif'; } }`
      : ''
  }`;
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${esc(d.name)}</title><style>${css}</style></head><body>
<main>${body}</main></body></html>`;
}

/** The truth as Markdown (ATX headings, fenced code, pipe tables). */
export function toMarkdown(d: SourceDoc): string {
  return d.blocks.map((b) => {
    switch (b.kind) {
      case 'h':
        return `${'#'.repeat(b.level)} ${b.text}`;
      case 'p':
        return b.text;
      case 'ul':
        return b.items.map((i) => `- ${i}`).join('\n');
      case 'ol':
        return b.items.map((i, k) => `${k + 1}. ${i}`).join('\n');
      case 'code':
        return `\`\`\`\n${b.lines.join('\n')}\n\`\`\``;
      case 'table':
        return [b.rows[0]!, b.rows[0]!.map(() => '---'), ...b.rows.slice(1)].map((r) => `| ${r.join(' | ')} |`).join('\n');
    }
  }).join('\n\n') + '\n';
}
