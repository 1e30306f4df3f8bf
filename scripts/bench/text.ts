/**
 * Text benchmark: language detection (ELD, what svc uses) against franc-min on the same sentences;
 * PII detection with checksums against a regex-only baseline on the same texts (throughput and the
 * false positives the checksums avoid); summarization time per page of a generated 100-page PDF through
 * HTTP on the tiny fixture model (pipeline cost: PDF reading, chunking, map-reduce calls).
 * Run: node --import tsx scripts/bench/text.ts
 */
import { franc } from 'franc-min';
import { detectLanguage } from '../../src/services/text/language.ts';
import { findPii, findPiiRegexOnly } from '../../src/services/text/pii.ts';
import { startHarness } from '../../test/routes/ollama/harness.ts';
import { hundredPagePdf } from '../../test/routes/text/harbour-report.ts';
import { machineNote, medianTime } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';

const RUNS = 5;
const BASE: [string, string, string][] = [
  ['en', 'eng', 'The weather was lovely yesterday, so we walked along the river until the sun went down.'],
  ['de', 'deu', 'Gestern war das Wetter schön, deshalb sind wir am Fluss entlang spaziert, bis die Sonne unterging.'],
  ['fr', 'fra', "Hier, il faisait beau, alors nous avons marché le long de la rivière jusqu'au coucher du soleil."],
  ['es', 'spa', 'Ayer hacía buen tiempo, así que caminamos por la orilla del río hasta que se puso el sol.'],
  ['it', 'ita', 'Ieri il tempo era bello, quindi abbiamo passeggiato lungo il fiume fino al tramonto del sole.'],
  ['pt', 'por', 'Ontem o tempo estava ótimo, então nós caminhamos ao longo do rio até o pôr do sol, conversando muito.'],
  ['nl', 'nld', 'Gisteren was het mooi weer, dus wandelden we langs de rivier tot de zon onderging.'],
  ['ru', 'rus', 'Вчера была прекрасная погода, поэтому мы гуляли вдоль реки, пока не село солнце.'],
  ['ja', 'jpn', '昨日は天気が良かったので、日が沈むまで川沿いを散歩しました。'],
  ['zh', 'cmn', '昨天天气很好，所以我们沿着河边散步，一直走到太阳落山。'],
];
// 1000 texts: each sentence with a varying tail so no detector can cache
const TEXTS = Array.from({ length: 1000 }, (_, i) => {
  const b = BASE[i % BASE.length]!;
  return { ...b, text: `${b[2]} ${i}` };
});

async function languageRows() {
  await detectLanguage('warm up');
  franc('warm up');
  let eldOk = 0, francOk = 0;
  for (const t of TEXTS.slice(0, BASE.length)) {
    if ((await detectLanguage(t.text)).language === t[0]) eldOk++;
    if (franc(t.text) === t[1]) francOk++;
  }
  const eld: number[] = [], fr: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    eld.push(
      await medianTime(async () => {
        for (const t of TEXTS) await detectLanguage(t.text);
      }, 1),
    );
    fr.push(
      await medianTime(() => {
        for (const t of TEXTS) franc(t.text);
      }, 1),
    );
  }
  const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  const e = TEXTS.length / (med(eld) / 1000), f = TEXTS.length / (med(fr) / 1000);
  return [
    `| language: ELD (svc) | ${Math.round(e)} texts/s | ${(e / f).toFixed(2)}× franc-min | ${eldOk}/10 right on the ten test sentences |`,
    `| language: franc-min (peer) | ${Math.round(f)} texts/s | 1.00× | ${francOk}/10 right |`,
  ];
}

function piiRows() {
  const texts = Array.from(
    { length: 1000 },
    (_, i) =>
      `Customer ${i} wrote from user${i}@example.org, phone +44 20 7946 ${
        String(1000 + i).slice(-4)
      }. Refund to GB82 WEST 1234 5698 7654 32 ` +
      `(old account GB82 WEST 1234 5698 7654 ${String(10 + (i % 80)).padStart(2, '0')}), card 4111 1111 1111 ${
        String(1111 + (i % 9)).padStart(4, '0')
      }. Order #${100000 + i} on 2024-03-${String(1 + (i % 28)).padStart(2, '0')}.`,
  );
  let ours = 0, base = 0;
  for (const t of texts) ours += findPii(t).length, base += findPiiRegexOnly(t).length;
  const a: number[] = [], b: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const s1 = performance.now();
    for (const t of texts) findPii(t);
    a.push(performance.now() - s1);
    const s2 = performance.now();
    for (const t of texts) findPiiRegexOnly(t);
    b.push(performance.now() - s2);
  }
  const med = (x: number[]) => x.sort((p, q) => p - q)[Math.floor(x.length / 2)]!;
  const o = texts.length / (med(a) / 1000), g = texts.length / (med(b) / 1000);
  return [
    `| PII: validated patterns (svc) | ${Math.round(o)} texts/s | ${(o / g).toFixed(2)}× regex-only | ${ours} spans in 1000 texts |`,
    `| PII: regex-only (baseline) | ${Math.round(g)} texts/s | 1.00× | ${base} spans (${base - ours} more: failed checksums, overlaps) |`,
  ];
}

async function summaryRows() {
  const pdf = Buffer.from(await hundredPagePdf()).toString('base64');
  const h = await startHarness();
  try {
    let info: { chunks?: number; calls?: number } = {};
    const ms = await medianTime(async () => {
      const res = await h.post('/svc/v1/summarize', {
        model: 'tiny-llama:test',
        file: pdf,
        filename: 'r.pdf',
        chunk_tokens: 60,
        length: 'short',
      });
      info = await res.json();
      if (res.status !== 200) throw new Error(JSON.stringify(info));
    }, 3);
    return [
      `| summarize: 100-page PDF, tiny fixture model | ${
        (ms / 100).toFixed(1)
      } ms/page | — | ${info.chunks} chunks, ${info.calls} model calls, ${
        (ms / 1000).toFixed(1)
      } s in all (random 2-layer model: pipeline cost, not a real model's speed) |`,
    ];
  } finally {
    await h.close();
  }
}

const rows = [...(await languageRows()), ...piiRows(), ...(await summaryRows())];
const body =
  `Machine: ${machineNote()}; medians of ${RUNS} runs (summarize: 3), the compared sides interleaved. Run: \`node --import tsx scripts/bench/text.ts\`.

| case | throughput | ratio | note |
| --- | --- | --- | --- |
${rows.join('\n')}`;
console.log(body);
writeSection('Text tasks (scripts/bench/text.ts)', body);
