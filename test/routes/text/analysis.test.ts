/**
 * Non-model text analysis over HTTP with known answers: language of sentences in ten languages, PII at
 * exact offsets with checksums respected (an invalid IBAN or card is not reported), redaction that leaves
 * no PII, entities at exact offsets, RAKE keyphrases, lexicon sentiment per sentence, a document input
 * (HTML upload), the job contract, and 400s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type InProcess, inProcess, json } from '../../support/server.ts';

let app: InProcess;
before(async () => {
  app = await inProcess();
});
after(async () => {
  await app?.close();
});

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await app.request(path, json(body, headers));
  return { status: res.status, body: await res.json() as any, res };
};

describe('detect-language', () => {
  const SENTENCES: [string, string][] = [
    ['en', 'The weather was lovely yesterday, so we walked along the river until the sun went down.'],
    ['de', 'Gestern war das Wetter schön, deshalb sind wir am Fluss entlang spaziert, bis die Sonne unterging.'],
    ['fr', "Hier, il faisait beau, alors nous avons marché le long de la rivière jusqu'au coucher du soleil."],
    ['es', 'Ayer hacía buen tiempo, así que caminamos por la orilla del río hasta que se puso el sol.'],
    ['it', 'Ieri il tempo era bello, quindi abbiamo passeggiato lungo il fiume fino al tramonto del sole.'],
    ['pt', 'Ontem o tempo estava ótimo, então nós caminhamos ao longo do rio até o pôr do sol, conversando muito.'],
    ['nl', 'Gisteren was het mooi weer, dus wandelden we langs de rivier tot de zon onderging.'],
    ['ru', 'Вчера была прекрасная погода, поэтому мы гуляли вдоль реки, пока не село солнце.'],
    ['ja', '昨日は天気が良かったので、日が沈むまで川沿いを散歩しました。'],
    ['zh', '昨天天气很好，所以我们沿着河边散步，一直走到太阳落山。'],
  ];
  for (const [lang, text] of SENTENCES) {
    it(`${lang}: ${text.slice(0, 30)}…`, async () => {
      const r = await post('/svc/v1/detect-language', { text });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.language, lang);
      assert.ok(r.body.confidence > 0 && r.body.confidence <= 1);
      assert.equal(typeof r.body.reliable, 'boolean');
      assert.match(r.body.method, /eld/);
    });
  }
});

const PII_TEXT =
  'Contact anna.schmidt@example.de or +49 30 1234567. Pay to DE89 3704 0044 0532 0130 00, not DE89 3704 0044 0532 0130 01. ' +
  'Card 4111 1111 1111 1111 (the number 4111 1111 1111 1112 fails Luhn). SSN 123-45-6789; order 2024-05-01 cost 1500 EUR.';

describe('pii', () => {
  it('finds each kind at its exact offsets; failing checksums are not reported', async () => {
    const r = await post('/svc/v1/pii', { text: PII_TEXT });
    assert.equal(r.status, 200);
    const want = [
      ['EMAIL', 'anna.schmidt@example.de'],
      ['PHONE', '+49 30 1234567'],
      ['IBAN', 'DE89 3704 0044 0532 0130 00'],
      ['CREDIT_CARD', '4111 1111 1111 1111'],
      ['US_SSN', '123-45-6789'],
    ];
    assert.deepEqual(r.body.entities.map((e: any) => [e.type, e.text]), want);
    for (const e of r.body.entities) {
      assert.equal(PII_TEXT.slice(e.start, e.end), e.text);
      assert.equal(e.start, PII_TEXT.indexOf(e.text));
    }
    assert.ok(!r.body.entities.some((e: any) => e.text.endsWith('01') || e.text.endsWith('1112')), 'invalid IBAN / card not reported');
    assert.match(r.body.method, /mod-97/);
    assert.equal(r.body.redacted_text, undefined);
  });

  it('redact: true leaves no PII (checked by detecting again), the rest of the text intact', async () => {
    const r = await post('/svc/v1/pii', { text: PII_TEXT, redact: true });
    const red = r.body.redacted_text as string;
    for (const e of r.body.entities) assert.ok(!red.includes(e.text), `${e.type} left in`);
    assert.ok(red.includes('[EMAIL]') && red.includes('[IBAN]') && red.includes('[CREDIT_CARD]'));
    assert.ok(red.includes('DE89 3704 0044 0532 0130 01'), 'the invalid IBAN is not PII and stays');
    assert.ok(red.includes('2024-05-01') && red.includes('1500 EUR'));
    const again = await post('/svc/v1/pii', { text: red });
    assert.deepEqual(again.body.entities, []);
    const masked = await post('/svc/v1/pii', { text: PII_TEXT, redact: true, redaction: 'mask' });
    assert.equal(masked.body.redacted_text.length, PII_TEXT.length);
  });

  it('types filter and unknown type 400', async () => {
    const r = await post('/svc/v1/pii', { text: PII_TEXT, types: ['IBAN'] });
    assert.deepEqual(r.body.entities.map((e: any) => e.type), ['IBAN']);
    const bad = await post('/svc/v1/pii', { text: PII_TEXT, types: ['PASSPORT_NUMBER_OF_MARS'] });
    assert.equal(bad.status, 400);
  });
});

describe('entities', () => {
  const T =
    'On 12 March 2024, Dr. Angela Weber of Siemens AG met Tim Cook in Berlin. Apple Inc. paid $2.5 million to the University of Oxford, up 12% on last year.';
  it('types at exact offsets', async () => {
    const r = await post('/svc/v1/entities', { text: T });
    assert.equal(r.status, 200);
    const got = r.body.entities.map((e: any) => [e.type, e.text, e.start, e.end]);
    const at = (s: string) => [T.indexOf(s), T.indexOf(s) + s.length];
    assert.deepEqual(got, [
      ['DATE', '12 March 2024', ...at('12 March 2024')],
      ['PERSON', 'Angela Weber', ...at('Angela Weber')],
      ['ORGANIZATION', 'Siemens AG', ...at('Siemens AG')],
      ['PERSON', 'Tim Cook', ...at('Tim Cook')],
      ['LOCATION', 'Berlin', ...at('Berlin')],
      ['ORGANIZATION', 'Apple Inc.', ...at('Apple Inc.')],
      ['MONEY', '$2.5 million', ...at('$2.5 million')],
      ['ORGANIZATION', 'University of Oxford', ...at('University of Oxford')],
      ['PERCENT', '12%', ...at('12%')],
    ]);
    assert.match(r.body.method, /gazetteer/);
  });
});

describe('keywords and sentiment', () => {
  it("RAKE on its paper's abstract ranks the known top phrases first", async () => {
    const text =
      'Compatibility of systems of linear constraints over the set of natural numbers. Criteria of compatibility of a system of linear Diophantine equations, strict inequations, and nonstrict inequations are considered. Upper bounds for components of a minimal set of solutions and algorithms of construction of minimal generating sets of solutions for all types of systems are given.';
    const r = await post('/svc/v1/keywords', { text, limit: 3 });
    assert.deepEqual(r.body.keywords.slice(0, 2).map((k: any) => k.text).sort(), [
      'linear Diophantine equations',
      'minimal generating sets',
    ]);
    const k = r.body.keywords[0];
    assert.equal(text.slice(k.offsets[0].start, k.offsets[0].end), k.text);
  });

  it('lexicon sentiment: overall and per sentence with offsets', async () => {
    const text = 'I love this phone. The battery is terrible and the screen broke. Shipping was on time.';
    const r = await post('/svc/v1/sentiment', { text });
    assert.deepEqual(r.body.sentences.map((s: any) => s.label), ['positive', 'negative', 'neutral']);
    for (const s of r.body.sentences) assert.equal(text.slice(s.start, s.end), s.text);
    assert.equal(r.body.overall.label, 'mixed');
    assert.equal((await post('/svc/v1/sentiment', { text: 'This is not good at all.' })).body.overall.label, 'negative');
    assert.match(r.body.method, /afinn/);
  });
});

describe('large inputs (run in the worker pool)', () => {
  // 60 000 characters of German prose with the PII text and the entity sentence far inside: the offsets
  // must still point into the text the caller sent, and the answers match those for the short texts.
  const FILLER = 'Gestern war das Wetter schön, deshalb sind wir am Fluss entlang spaziert, bis die Sonne unterging. ';
  const T = 'On 12 March 2024, Dr. Angela Weber of Siemens AG met Tim Cook in Berlin.';
  const BIG = FILLER.repeat(300) + PII_TEXT + ' ' + T + ' ' + FILLER.repeat(300);
  it('pii, entities, keywords and detect-language answer as for short texts, offsets exact', async () => {
    assert.ok(BIG.length > 50_000);
    const pii = await post('/svc/v1/pii', { text: BIG, redact: true });
    assert.equal(pii.status, 200, JSON.stringify(pii.body));
    assert.deepEqual(pii.body.entities.map((e: any) => e.type), ['EMAIL', 'PHONE', 'IBAN', 'CREDIT_CARD', 'US_SSN']);
    for (const e of pii.body.entities) assert.equal(e.start, BIG.indexOf(e.text));
    assert.equal(
      pii.body.redacted_text.length,
      BIG.length - pii.body.entities.reduce((n: number, e: any) => n + e.text.length - `[${e.type}]`.length, 0),
    );
    const ent = await post('/svc/v1/entities', { text: BIG, types: ['PERSON', 'ORGANIZATION'] });
    assert.equal(ent.status, 200);
    const at = (s: string) => [BIG.indexOf(s), BIG.indexOf(s) + s.length];
    assert.deepEqual(ent.body.entities.map((e: any) => [e.text, e.start, e.end]), [['Angela Weber', ...at('Angela Weber')], [
      'Siemens AG',
      ...at('Siemens AG'),
    ], ['Tim Cook', ...at('Tim Cook')]]);
    const kw = await post('/svc/v1/keywords', { text: BIG, limit: 5 });
    assert.equal(kw.status, 200);
    for (const k of kw.body.keywords) {
      for (const o of k.offsets) assert.equal(BIG.slice(o.start, o.end).toLowerCase(), k.text.toLowerCase());
    }
    const lang = await post('/svc/v1/detect-language', { text: BIG });
    assert.equal(lang.status, 200);
    assert.equal(lang.body.language, 'de');
    assert.match(lang.body.method, /eld/);
  });
});

describe('inputs and the job contract', () => {
  it('a document (HTML, base64) is read through the document pipeline; offsets point into the returned text', async () => {
    const html =
      '<html><body><h1>Invoice</h1><p>Pay to DE89 3704 0044 0532 0130 00 by Friday. Questions: billing@example.com</p></body></html>';
    const r = await post('/svc/v1/pii', { file: Buffer.from(html).toString('base64'), filename: 'invoice.html' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.source.format, 'html');
    assert.deepEqual(r.body.entities.map((e: any) => e.type), ['IBAN', 'EMAIL']);
    for (const e of r.body.entities) assert.equal(r.body.text.slice(e.start, e.end), e.text);
  });

  it('Prefer: respond-async gives 202 and the job result equals the synchronous answer', async () => {
    const sync = await post('/svc/v1/keywords', { text: 'Solar panels and wind turbines feed the regional power grid.' });
    const a = await post('/svc/v1/keywords', { text: 'Solar panels and wind turbines feed the regional power grid.' }, {
      prefer: 'respond-async',
    });
    assert.equal(a.status, 202);
    let job: any;
    for (let i = 0; i < 100; i++) {
      job = await (await app.request(a.res.headers.get('location')!)).json();
      if (job.status !== 'processing') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(job.status, 'completed');
    assert.deepEqual(job.result, sync.body);
  });

  it('400s: no text, text and file together, unsupported file 415', async () => {
    assert.equal((await post('/svc/v1/keywords', {})).status, 400);
    assert.equal((await post('/svc/v1/pii', { text: '  ' })).status, 400);
    assert.equal((await post('/svc/v1/pii', { text: 'a', file: Buffer.from('hello').toString('base64') })).status, 400);
    const bin = await post('/svc/v1/pii', { file: Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0, 9]).toString('base64') });
    assert.equal(bin.status, 415);
    assert.equal(bin.body.error, 'unsupported_file_type');
  });
});
