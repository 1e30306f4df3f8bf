/**
 * Constrained decoding of the schemas real clients send: zod 4's `toJSONSchema` (integers with safe-integer
 * bounds, formats with zod's own patterns, records, discriminated unions, tuples, recursion) and
 * pydantic-v2-shaped schemas ($defs, allOf, bounded numbers, formats, patterns). Random logits over the
 * tiny-llama vocabulary, many seeds and budgets; every output judged by ajv with ajv-formats (full mode).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as z from 'zod';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import { grammarOf, type OutputConstraint } from '../../../src/services/inference/structured/index.ts';
import { ServiceError } from '../../../src/services/errors.ts';
import { decodeRandom, tinyLlamaTokenizer } from './random-decode.ts';

let tok: PreTrainedTokenizer;

before(async () => {
  tok = await tinyLlamaTokenizer();
});

const run = (c: OutputConstraint, seed: number, maxNew: number, peaky = false) => decodeRandom(tok, c, seed, maxNew, peaky);

const ajv = new Ajv2020({ strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

const Tree: z.ZodType = z.object({
  name: z.string().max(8),
  get children() {
    return z.array(Tree).max(2);
  },
});
const ZOD: Record<string, z.ZodType> = {
  ints: z.object({
    n: z.number().int(),
    age: z.int().min(0).max(130),
    neg: z.int().max(-5),
    even: z.int().multipleOf(2).min(10).max(100),
    big: z.int().positive(),
  }),
  numbers: z.object({
    p: z.number().min(0).max(1),
    t: z.number().gt(-1.5).lt(2.25),
    q: z.number().gte(100),
    h: z.number().multipleOf(0.25).max(3),
  }),
  formats: z.object({
    e: z.email(),
    u: z.uuid(),
    d: z.iso.datetime(),
    dt: z.iso.date(),
    t: z.iso.time(),
    url: z.url(),
    ip: z.ipv4(),
    ip6: z.ipv6(),
  }),
  strings: z.object({
    pat: z.string().regex(/^[A-Z]{3}-\d+$/),
    len: z.string().min(2).max(5),
    code: z.string().regex(/[a-f]{4}/).max(10),
    host: z.hostname(),
    nul: z.string().nullable(),
  }),
  records: z.object({
    r: z.record(z.string(), z.number()),
    byEnum: z.record(z.enum(['a', 'b']), z.boolean()),
    keyed: z.record(z.string().regex(/^k_[a-z]+$/), z.int()),
  }),
  unions: z.object({
    du: z.discriminatedUnion('kind', [z.object({ kind: z.literal('a'), x: z.string() }), z.object({ kind: z.literal('b'), y: z.int() })]),
    tup: z.tuple([z.string(), z.number(), z.boolean()]),
    opt: z.string().optional(),
  }),
  tree: Tree,
};

const PYDANTIC: Record<string, unknown> = {
  // pydantic v2 model_json_schema of models with Field(ge=, le=), EmailStr, datetime, UUID, constr(pattern=), nested $defs
  person: {
    $defs: {
      Address: {
        properties: { street: { title: 'Street', type: 'string' }, zip: { pattern: '^\\d{5}$', title: 'Zip', type: 'string' } },
        required: ['street', 'zip'],
        title: 'Address',
        type: 'object',
      },
      Role: { enum: ['admin', 'user'], title: 'Role', type: 'string' },
    },
    properties: {
      id: { format: 'uuid', title: 'Id', type: 'string' },
      email: { format: 'email', title: 'Email', type: 'string' },
      score: { maximum: 1, minimum: 0, title: 'Score', type: 'number' },
      count: { exclusiveMinimum: 0, title: 'Count', type: 'integer' },
      born: { format: 'date', title: 'Born', type: 'string' },
      seen: { format: 'date-time', title: 'Seen', type: 'string' },
      wait: { format: 'duration', title: 'Wait', type: 'string' },
      address: { $ref: '#/$defs/Address' },
      role: { $ref: '#/$defs/Role', default: 'user' },
      nick: { anyOf: [{ maxLength: 10, minLength: 2, type: 'string' }, { type: 'null' }], default: null, title: 'Nick' },
      tags: { additionalProperties: { type: 'integer' }, title: 'Tags', type: 'object' },
      host: { format: 'hostname', type: 'string' },
      site: { format: 'uri', maxLength: 2083, minLength: 1, type: 'string' },
    },
    required: ['id', 'email', 'score', 'count', 'born', 'seen', 'wait', 'address', 'role', 'host', 'site'],
    title: 'Person',
    type: 'object',
  },
  // pydantic discriminated union (oneOf + discriminator mapping) and allOf inheritance-style merge
  pets: {
    $defs: {
      Cat: {
        properties: { pet_type: { const: 'cat', title: 'Pet Type', type: 'string' }, meows: { type: 'integer', minimum: 0, maximum: 9 } },
        required: ['pet_type', 'meows'],
        title: 'Cat',
        type: 'object',
      },
      Dog: {
        properties: { pet_type: { const: 'dog', title: 'Pet Type', type: 'string' }, barks: { type: 'number', exclusiveMaximum: 10 } },
        required: ['pet_type', 'barks'],
        title: 'Dog',
        type: 'object',
      },
      Base: { properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'], type: 'object' },
    },
    properties: {
      pet: {
        discriminator: { mapping: { cat: '#/$defs/Cat', dog: '#/$defs/Dog' }, propertyName: 'pet_type' },
        oneOf: [{ $ref: '#/$defs/Cat' }, { $ref: '#/$defs/Dog' }],
        title: 'Pet',
      },
      owner: { allOf: [{ $ref: '#/$defs/Base' }, { properties: { name: { type: 'string', maxLength: 6 } }, required: ['name'] }] },
      legacy: { type: 'integer', minimum: 5, exclusiveMaximum: 7 },
      pair: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'string', format: 'ipv4' }], items: false },
      nullable: { type: 'integer', nullable: true },
    },
    required: ['pet', 'owner', 'legacy', 'pair', 'nullable'],
    type: 'object',
  },
  // OpenAI's documented recursive UI schema: items {"$ref": "#"} ends through an empty array
  openaiUi: {
    type: 'object',
    properties: {
      type: { type: 'string', enum: ['div', 'button', 'header', 'section', 'field', 'form'] },
      label: { type: 'string' },
      children: { type: 'array', items: { $ref: '#' } },
      attributes: {
        type: 'array',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, value: { type: 'string' } },
          required: ['name', 'value'],
          additionalProperties: false,
        },
      },
    },
    required: ['type', 'label', 'children', 'attributes'],
    additionalProperties: false,
  },
};

const SCHEMAS: Record<string, unknown> = {
  ...Object.fromEntries(Object.entries(ZOD).map(([k, v]) => [`zod ${k}`, z.toJSONSchema(v)])),
  ...Object.fromEntries(Object.entries(PYDANTIC).map(([k, v]) => [`pydantic-shaped ${k}`, v])),
};

describe('constrained decoding of client-generated schemas (ajv + ajv-formats judge)', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`${name}: parses and validates, 40 seeds`, () => {
      const validate = ajv.compile(schema as object);
      for (let seed = 1; seed <= 40; seed++) {
        for (const maxNew of [seed % 2 ? 400 : 900]) {
          const { text, ended } = run({ type: 'json_schema', schema }, seed * 104729 + maxNew, maxNew, seed % 3 === 0);
          let v: unknown;
          assert.doesNotThrow(() => (v = JSON.parse(text)), `seed ${seed} max ${maxNew}: ${text}`);
          assert.ok(validate(v), `seed ${seed} max ${maxNew}: ${text} ${JSON.stringify(validate.errors)}`);
          assert.ok(ended, `ends with EOS: ${text}`);
        }
      }
    });
  }

  it('a zod int tool parameter in a forced tool call', () => {
    const parameters = z.toJSONSchema(z.object({ a: z.int(), b: z.int().min(1).max(3) }));
    const validate = ajv.compile(parameters);
    for (let seed = 1; seed <= 30; seed++) {
      const { text } = run({ type: 'tool_call', format: 'hermes', tools: [{ name: 'add', parameters }] }, seed, 80, seed % 2 === 0);
      const call = JSON.parse(/^<tool_call>\n(.*)\n<\/tool_call>$/s.exec(text)![1]);
      assert.ok(validate(call.arguments), text);
    }
  });

  it('refuses what cannot be enforced, by name', () => {
    const cases: [unknown, RegExp][] = [
      [z.toJSONSchema(z.iso.duration()), /lookahead that is not at the start/],
      [{ type: 'string', pattern: '\\p{L}+' }, /Unicode property/],
      [{ type: 'string', pattern: '^é$' }, /printable ASCII/],
      [{ type: 'integer', minimum: 5, maximum: 4 }, /numeric range/],
      [
        { type: 'object', properties: { Bad: { type: 'string' } }, propertyNames: { pattern: '^[a-z]+$' } },
        /"Bad" that "propertyNames" refuses/,
      ],
      [{ oneOf: [{ type: 'object', properties: { k: { const: 'a' } } }, { type: 'object', properties: { k: { const: 'b' } } }] }, /oneOf/],
    ];
    for (const [schema, re] of cases) {
      assert.throws(
        () => grammarOf({ type: 'json_schema', schema }),
        (e: unknown) => e instanceof ServiceError && e.status === 400 && re.test(e.message),
        `${JSON.stringify(schema)}`,
      );
    }
  });
});
