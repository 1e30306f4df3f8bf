/**
 * Constrained decoding, without a model: random logits (many seeds) pushed through the processor over the
 * tiny-llama vocabulary. Every output must parse, validate against its schema (ajv), and end within the
 * token budget; refused schema features are 400s naming the feature.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import {
  createConstrainedProcessor,
  type DecodeHints,
  grammarOf,
  type OutputConstraint,
  vocabOf,
} from '../../../src/services/inference/structured/index.ts';
import { createSamplerProcessor, seededRandom } from '../../../src/services/inference/sampling.ts';
import { ServiceError } from '../../../src/services/errors.ts';
import { decodeRandom, EOS, tinyLlamaTokenizer } from './random-decode.ts';

let tok: PreTrainedTokenizer;

before(async () => {
  tok = await tinyLlamaTokenizer();
});

const run = (c: OutputConstraint, seed: number, maxNew: number, peaky = false) => decodeRandom(tok, c, seed, maxNew, peaky);

const ajv = new Ajv({ strict: false });

const SCHEMAS: Record<string, unknown> = {
  nested: {
    type: 'object',
    properties: {
      name: { type: 'string', maxLength: 12 },
      age: { type: 'integer', minimum: 0 },
      tags: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 3 },
      address: {
        type: 'object',
        properties: { city: { type: 'string' }, zip: { type: 'string', minLength: 5, maxLength: 5 } },
        required: ['city', 'zip'],
        additionalProperties: false,
      },
      active: { type: 'boolean' },
      note: { type: ['string', 'null'] },
      score: { type: 'number' },
    },
    required: ['name', 'age', 'tags', 'address', 'active'],
    additionalProperties: false,
  },
  refs: {
    $defs: {
      item: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 1, maximum: 9 },
          kids: { type: 'array', items: { $ref: '#/$defs/item' }, maxItems: 2 },
        },
        required: ['id'],
      },
    },
    type: 'object',
    properties: { root: { $ref: '#/$defs/item' } },
    required: ['root'],
  },
  union: {
    type: 'object',
    properties: {
      v: { anyOf: [{ type: 'number' }, { type: 'string', enum: ['a', 'b'] }, { type: 'array', items: { type: 'boolean' } }] },
      c: { const: 'x"y' },
    },
    required: ['v', 'c'],
  },
  array: { type: 'array', items: { type: 'object', properties: { k: { enum: [1, 12, 'k', null] } }, required: ['k'] }, minItems: 2 },
};

describe('constrained decoding over random logits', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`${name}: always parses, validates and ends within max_tokens (60 seeds × 3 budgets)`, () => {
      const validate = ajv.compile(schema as object);
      for (let seed = 1; seed <= 60; seed++) {
        for (const maxNew of [90, 150, 300]) {
          const { text, tokens, ended } = run({ type: 'json_schema', schema }, seed * 7919 + maxNew, maxNew, seed % 3 === 0);
          assert.ok(tokens <= maxNew);
          let v: unknown;
          assert.doesNotThrow(() => (v = JSON.parse(text)), `seed ${seed} max ${maxNew}: ${text}`);
          assert.ok(validate(v), `seed ${seed} max ${maxNew}: ${text} ${JSON.stringify(validate.errors)}`);
          assert.ok(ended, `ends with EOS: ${text}`);
        }
      }
    });
  }

  it('json_object: any object, valid within tight budgets', () => {
    for (let seed = 1; seed <= 80; seed++) {
      const { text } = run({ type: 'json_object' }, seed, 10 + (seed % 40), seed % 2 === 0);
      const v = JSON.parse(text);
      assert.ok(v && typeof v === 'object' && !Array.isArray(v), text);
    }
  });

  it('a forced hermes tool call: wrapper, a known name, arguments valid for that tool', () => {
    const tools = [
      {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'] },
      },
      { name: 'add', parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'] } },
    ];
    const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.parameters)]));
    for (let seed = 1; seed <= 60; seed++) {
      const { text } = run({ type: 'tool_call', format: 'hermes', tools }, seed, 80, seed % 2 === 0);
      const m = /^<tool_call>\n(.*)\n<\/tool_call>$/s.exec(text);
      assert.ok(m, text);
      const call = JSON.parse(m[1]);
      assert.ok(call.name in validators, text);
      assert.ok(validators[call.name](call.arguments), text);
    }
  });

  it('a forced hermes call whose model keeps writing </tool_call>: the tag appears once, as the close', () => {
    // a hermes parser ends the block at the first </tool_call>; inside a JSON string the model could spell it
    const tools = [{ name: 'note', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }];
    const vocab = vocabOf(tok);
    const tag = '</tool_call>';
    // the whole tag as one token, and the tokens that spell it piece by piece
    const text = (b: Uint8Array | null) => (b ? new TextDecoder().decode(b) : '');
    const favoured = [...vocab.bytes.keys()].filter((id) =>
      ['</tool_call>', '</', '<', '/', 'tool', '_call', '>'].includes(text(vocab.bytes[id]!))
    );
    assert.ok(favoured.some((id) => text(vocab.bytes[id]!) === tag), 'the vocabulary has the tag as a token');
    let inside = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const { text } = decodeRandom(tok, { type: 'tool_call', format: 'hermes', tools }, seed, 120, false, favoured);
      assert.equal(text.indexOf(tag), text.length - tag.length, `the tag before the end: ${text}`);
      const m = /^<tool_call>\n(.*)\n<\/tool_call>$/s.exec(text);
      assert.ok(m, text);
      const { arguments: args } = JSON.parse(m[1]);
      assert.equal(typeof args.text, 'string', text);
      if (args.text.includes('</')) inside++;
    }
    // the model did try: its strings hold '</' (the tag itself only with JSON's escaped slash, <\/)
    assert.ok(inside > 5, `only ${inside} of 40 strings hold '</'`);
  });

  it('refuses a budget smaller than the shortest valid output', () => {
    assert.throws(
      () => run({ type: 'json_schema', schema: SCHEMAS.nested }, 1, 20),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && /budget of 20 tokens/.test(e.message),
    );
  });

  it('refuses unsupported features by name', () => {
    const cases: [unknown, RegExp][] = [
      [{ type: 'string', pattern: '(?<=a)b' }, /lookbehind/],
      [{ type: 'string', pattern: '^(a)\\1$' }, /backreference/],
      [{ type: 'string', pattern: '^a\\bb' }, /word boundary/],
      [{ type: 'string', format: 'credit-card' }, /format "credit-card"/],
      [{ type: 'number', multipleOf: 0.1 }, /"multipleOf" 0.1/],
      [{ type: 'array', items: {}, uniqueItems: true }, /uniqueItems/],
      [{ type: 'object', patternProperties: {} }, /patternProperties/],
      [{ oneOf: [{ type: 'object' }, { type: 'object', properties: { a: { type: 'string' } } }] }, /oneOf/],
      [{ allOf: [{ type: 'string', pattern: 'a' }, { pattern: 'b' }] }, /allOf/],
      [{ not: { type: 'string' } }, /"not"/],
      [{ $ref: 'http://example.com/s.json' }, /\$ref/],
    ];
    for (const [schema, re] of cases) {
      assert.throws(
        () => grammarOf({ type: 'json_schema', schema }),
        (e: unknown) => e instanceof ServiceError && e.status === 400 && re.test(e.message),
        JSON.stringify(schema),
      );
    }
  });
});

describe('choosing without the full mask (the model’s own choice checked first)', () => {
  /**
   * The same random logits decoded twice: once with the full mask every step (no hints), once with the
   * processor told how the token is chosen next; the real sampler (seeded alike) picks after both.
   */
  function both(schema: unknown, seed: number, maxNew: number, hints: DecodeHints) {
    const sides = [undefined, hints].map((h) => {
      const rand = seededRandom(seed);
      const proc = createConstrainedProcessor(grammarOf({ type: 'json_schema', schema }), vocabOf(tok), EOS, 3, maxNew, h);
      const sampler = createSamplerProcessor(hints);
      const ids = [1n, 2n, 3n];
      const out: number[] = [];
      for (let step = 0; step < maxNew; step++) {
        const data = new Float32Array(485);
        for (let i = 0; i < data.length; i++) data[i] = rand() * 8;
        proc([ids], { data, dims: [1, 485] });
        sampler?.([ids], { data, dims: [1, 485] });
        let best = 0;
        for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
        ids.push(BigInt(best));
        out.push(best);
        if (EOS.includes(best)) break;
      }
      return { out, fast: proc.stats.fast };
    });
    return { full: sides[0].out, hinted: sides[1].out, fast: sides[1].fast };
  }

  const cases = [['greedy', { temperature: 0 }, 4], ['top_k 20 + top_p 0.8', { temperature: 0.7, topK: 20, topP: 0.8 }, 10]] as const;
  for (const [label, hints, share] of cases) {
    it(`${label}: token for token what the full mask gives (25 seeds × 4 schemas); many steps build no mask`, () => {
      let fast = 0;
      let steps = 0;
      for (const schema of Object.values(SCHEMAS)) {
        const validate = ajv.compile(schema as object);
        for (let seed = 1; seed <= 25; seed++) {
          const r = both(schema, seed, 150, { ...hints, seed });
          assert.deepEqual(r.hinted, r.full, `seed ${seed}`);
          const text = tok.decode(r.hinted, { skip_special_tokens: true });
          assert.ok(validate(JSON.parse(text)), text);
          fast += r.fast;
          steps += r.hinted.length;
        }
      }
      assert.ok(fast > steps / share, `${fast} of ${steps} steps without the mask`);
    });
  }

  it('temperature sampling by rejection: the token follows the constrained distribution (chi-square)', () => {
    const grammar = grammarOf({ type: 'json_schema', schema: { type: 'string', maxLength: 40 } });
    const vocab = vocabOf(tok);
    const quote = vocab.bytes.findIndex((b) => b?.length === 1 && b[0] === 0x22);
    const ids = [1n, 2n, 3n, BigInt(quote)]; // inside the string: most of the vocabulary is allowed
    const maskOf = (l: Float32Array) => {
      const m = Float32Array.from(l);
      createConstrainedProcessor(grammar, vocab, EOS, 3, 60)([ids], { data: m, dims: [1, 485] });
      return m;
    };
    const rand = seededRandom(99);
    const logits = new Float32Array(485);
    for (let i = 0; i < logits.length; i++) logits[i] = rand() * 3;
    // the disallowed tokens made likely, so rejection misses often and both paths run
    const probe = maskOf(logits);
    for (let i = 0; i < logits.length; i++) if (probe[i] === -Infinity) logits[i] += 4;
    const masked = maskOf(logits);
    const allowed = [...masked.keys()].filter((i) => masked[i] > -Infinity);
    let z = 0;
    for (const i of allowed) z += Math.exp(masked[i]);
    const N = 4000;
    const counts = new Map<number, number>();
    let fast = 0;
    for (let s = 1; s <= N; s++) {
      const proc = createConstrainedProcessor(grammar, vocab, EOS, 3, 60, { temperature: 1, seed: s });
      const data = Float32Array.from(logits);
      proc([ids], { data, dims: [1, 485] });
      createSamplerProcessor({ temperature: 1, seed: s + 7 })!([ids], { data, dims: [1, 485] });
      const pick = data.findIndex((v) => v > -Infinity);
      assert.ok(allowed.includes(pick), `token ${pick} is not allowed`);
      counts.set(pick, (counts.get(pick) ?? 0) + 1);
      fast += proc.stats.fast;
    }
    // rare tokens pooled into one cell so every expected count is ≥ 5
    let chi = 0;
    let cells = 0;
    let poolE = 0;
    let poolO = 0;
    for (const i of allowed) {
      const e = (N * Math.exp(masked[i])) / z;
      const o = counts.get(i) ?? 0;
      if (e < 5) {
        poolE += e;
        poolO += o;
        continue;
      }
      chi += (o - e) ** 2 / e;
      cells++;
    }
    if (poolE > 0) (chi += (poolO - poolE) ** 2 / poolE), cells++;
    const df = cells - 1;
    assert.ok(df >= 20, `${df} degrees of freedom`);
    // far above the 99.9% point (≈ df + 4.4·sqrt(df) for these df), far below what a wrong distribution gives
    assert.ok(chi < df + 6 * Math.sqrt(2 * df), `chi-square ${chi.toFixed(1)} over ${df} degrees of freedom`);
    assert.ok(fast > N / 10 && fast < N - N / 10, `both paths taken (${fast} of ${N} by rejection)`);
  });
});
