/**
 * JSON Schema → grammar nodes for constrained decoding. The nodes describe a *subset* of the JSON texts the
 * schema accepts (compact JSON, object keys in declared order, no exponents, bounded digits), so that every
 * text the automaton can finish is valid. A keyword the automaton cannot enforce is refused by name
 * (`unsupportedSchema`), never ignored. Annotations (title, description, default, examples, ...) are skipped.
 */
import { ServiceError } from '../../errors.ts';
import { unsupportedSchema } from './schema-error.ts';
import { type Dfa, patternDfa, prune, shortestAtLeast, stepDfa } from './regex.ts';
import { FORMAT_PATTERNS } from './formats.ts';
import { type NumRange, restLen, scaled } from './number-range.ts';

export type Node =
  | { k: 'obj'; id: number; props: Prop[]; free?: Node; keys?: Node & { k: 'str' } }
  | { k: 'arr'; id: number; items: Node; min: number; max: number; prefix?: Node[] }
  | { k: 'str'; id: number; min: number; max: number; dfa?: Dfa; memo?: Map<number, number> }
  | { k: 'num'; id: number; int: boolean; nonNeg: boolean; positive: boolean; range?: NumRange }
  | { k: 'lit'; id: number; texts: Uint8Array[] }
  | { k: 'any'; id: number; alts: Node[] };

export interface Prop {
  key: string;
  /** The key as it appears between the quotes (JSON-escaped, UTF-8). */
  keyBytes: Uint8Array;
  node: Node;
  req: boolean;
}

export { unsupportedSchema } from './schema-error.ts';

const enc = new TextEncoder();
const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  '$schema',
  '$id',
  '$comment',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$anchor',
  'strict',
  'name',
  'contentMediaType',
  'contentEncoding',
  'discriminator',
  '$dynamicAnchor',
]);

interface Ctx {
  root: unknown;
  nextId: number;
  refs: Map<string, Node>;
}

/** A placeholder filled after the referenced schema compiles, so recursive $refs work. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export function compileSchema(schema: unknown): Node {
  const ctx: Ctx = { root: schema, nextId: 0, refs: new Map() };
  const node = compile(schema, ctx, '#');
  checkFinite(node);
  return node;
}

/** Any JSON object (response_format json_object): free keys, any values. */
export function anyObjectNode(): Node {
  return compileSchema({ type: 'object' });
}

function id(ctx: Ctx) {
  return ctx.nextId++;
}

function lit(ctx: Ctx, values: unknown[]): Node {
  const texts = [...new Set(values.map((v) => JSON.stringify(v)))].map((t) => enc.encode(t));
  return { k: 'lit', id: id(ctx), texts };
}

function anyValue(ctx: Ctx, depth = 0): Node {
  const alts: Node[] = [
    { k: 'str', id: id(ctx), min: 0, max: Infinity },
    { k: 'num', id: id(ctx), int: false, nonNeg: false, positive: false },
    lit(ctx, [true, false, null]),
  ];
  // Nesting of free values is bounded (a model could otherwise open containers forever; the budget close
  // would still end it, but a bounded depth keeps the close short).
  if (depth < 4) {
    alts.push({ k: 'obj', id: id(ctx), props: [], free: anyValue(ctx, depth + 1) });
    alts.push({ k: 'arr', id: id(ctx), items: anyValue(ctx, depth + 1), min: 0, max: Infinity });
  }
  return { k: 'any', id: id(ctx), alts };
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) throw unsupportedSchema(`$ref to "${ref}" (only local references "#/...")`);
  let cur = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!cur || typeof cur !== 'object' || !(part in (cur as object))) {
      throw new ServiceError(400, 'invalid_request', `response schema: $ref "${ref}" does not resolve`);
    }
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function compile(s: unknown, ctx: Ctx, path: string): Node {
  if (
    s === true || (s && typeof s === 'object' && Object.keys(s).every((k) => ANNOTATIONS.has(k) || k === '$defs' || k === 'definitions'))
  ) return anyValue(ctx);
  if (s === false) throw unsupportedSchema(`the schema false (at ${path}: no value matches it)`);
  if (!s || typeof s !== 'object' || Array.isArray(s)) {
    throw new ServiceError(400, 'invalid_request', `response schema: ${path} is not a schema object`);
  }
  const o = s as Record<string, unknown>;

  if (typeof o.$ref === 'string') {
    const others = Object.keys(o).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k) && k !== '$defs' && k !== 'definitions');
    // Keywords beside $ref apply together with the referenced schema (2020-12): an allOf of both.
    if (others.length) {
      const { $ref, ...rest } = o;
      return compile({ allOf: [{ $ref }, rest] }, ctx, path);
    }
    const known = ctx.refs.get(o.$ref);
    if (known) return known;
    const placeholder = { k: 'any', id: id(ctx), alts: [] } as Mutable<Node & { k: 'any' }>;
    ctx.refs.set(o.$ref, placeholder);
    const target = compile(resolvePointer(ctx.root, o.$ref), ctx, o.$ref);
    placeholder.alts = [target];
    return placeholder;
  }

  for (const k of Object.keys(o)) {
    if (ANNOTATIONS.has(k)) continue;
    if (!SUPPORTED.has(k)) throw unsupportedSchema(`the keyword "${k}" (at ${path})`);
  }
  if (o.uniqueItems === true && !(typeof o.maxItems === 'number' && o.maxItems <= 1)) {
    throw unsupportedSchema(`the keyword "uniqueItems" (at ${path})`);
  }
  if (Array.isArray(o.allOf)) return compile(mergeAllOf(o, ctx, path), ctx, path);
  if (o.nullable === true) {
    const { nullable: _, ...rest } = o;
    return { k: 'any', id: id(ctx), alts: [compile(rest, ctx, path), lit(ctx, [null])] };
  }

  if ('const' in o) return lit(ctx, [o.const]);
  if (Array.isArray(o.enum)) {
    if (o.enum.length === 0) throw unsupportedSchema(`an empty enum (at ${path})`);
    return lit(ctx, o.enum);
  }

  const union = (o.anyOf ?? o.oneOf) as unknown;
  if (union !== undefined) {
    if (!Array.isArray(union) || union.length === 0) {
      throw new ServiceError(400, 'invalid_request', `response schema: anyOf/oneOf at ${path} must be a non-empty array`);
    }
    if (o.type !== undefined || 'properties' in o || 'items' in o) {
      throw unsupportedSchema(`"anyOf"/"oneOf" combined with sibling type keywords (at ${path})`);
    }
    const alts = union.map((u, i) => compile(u, ctx, `${path}/${o.anyOf ? 'anyOf' : 'oneOf'}/${i}`));
    if (o.oneOf) checkDisjoint(alts, path);
    return { k: 'any', id: id(ctx), alts };
  }

  const types = o.type === undefined ? undefined : Array.isArray(o.type) ? (o.type as string[]) : [o.type as string];
  if (!types) {
    if ('properties' in o || 'required' in o || 'additionalProperties' in o) return compileType('object', o, ctx, path);
    if ('items' in o || 'prefixItems' in o || 'minItems' in o || 'maxItems' in o) return compileType('array', o, ctx, path);
    // Type-specific keywords without a type: generate that type (valid, and the keywords stay enforced).
    if (['pattern', 'format', 'minLength', 'maxLength'].some((k) => k in o)) return compileType('string', o, ctx, path);
    if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].some((k) => k in o)) {
      return compileType('number', o, ctx, path);
    }
    if ('propertyNames' in o) return compileType('object', o, ctx, path);
    return anyValue(ctx);
  }
  if (types.length === 1) return compileType(types[0], o, ctx, path);
  return { k: 'any', id: id(ctx), alts: types.map((t) => compileType(t, o, ctx, path)) };
}

const SUPPORTED = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  '$defs',
  'definitions',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'unevaluatedProperties',
  'uniqueItems',
  'exclusiveMaximum',
  'multipleOf',
  'format',
  'pattern',
  'propertyNames',
  'prefixItems',
  'nullable',
  'additionalItems',
]);

function num(v: unknown, name: string, path: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ServiceError(400, 'invalid_request', `response schema: "${name}" at ${path} must be a number`);
  }
  return v;
}

function compileType(t: string, o: Record<string, unknown>, ctx: Ctx, path: string): Node {
  switch (t) {
    case 'null':
      return lit(ctx, [null]);
    case 'boolean':
      return lit(ctx, [true, false]);
    case 'string': {
      const min = num(o.minLength, 'minLength', path) ?? 0;
      const max = num(o.maxLength, 'maxLength', path) ?? Infinity;
      if (max < min) throw unsupportedSchema(`maxLength below minLength (at ${path})`);
      const dfa = stringDfa(o, path);
      const node: Node = { k: 'str', id: id(ctx), min: Math.ceil(min), max: Math.floor(max), dfa, memo: dfa && new Map() };
      if (dfa && shortestAtLeast(dfa, 0, node.min, node.memo!) > node.max) {
        throw unsupportedSchema(`a "pattern"/"format" with no match within minLength..maxLength (at ${path})`);
      }
      return node;
    }
    case 'integer':
    case 'number':
      return compileNumber(t === 'integer', o, ctx, path);
    case 'array': {
      // Tuples: prefixItems (2020-12) or items as an array (draft 7, the rest under additionalItems).
      const tuple = Array.isArray(o.prefixItems) ? o.prefixItems : Array.isArray(o.items) ? o.items : undefined;
      const restSchema = Array.isArray(o.prefixItems) ? o.items : Array.isArray(o.items) ? o.additionalItems : o.items;
      let min = num(o.minItems, 'minItems', path) ?? 0;
      let max = num(o.maxItems, 'maxItems', path) ?? Infinity;
      if (max < min) throw unsupportedSchema(`maxItems below minItems (at ${path})`);
      let prefix: Node[] | undefined;
      if (tuple) {
        prefix = tuple.map((t, i) => compile(t, ctx, `${path}/prefixItems/${i}`));
        // Every tuple position is generated (a valid choice whatever minItems says).
        min = Math.max(min, Math.min(prefix.length, max));
        if (restSchema === false) max = Math.min(max, prefix.length);
      }
      const items = restSchema === undefined || restSchema === true || restSchema === false
        ? anyValue(ctx)
        : compile(restSchema, ctx, `${path}/items`);
      if (restSchema === false && !tuple) max = 0;
      return { k: 'arr', id: id(ctx), items, min, max, prefix };
    }
    case 'object': {
      let propsIn = (o.properties ?? {}) as Record<string, unknown>;
      if (typeof propsIn !== 'object' || Array.isArray(propsIn)) {
        throw new ServiceError(400, 'invalid_request', `response schema: properties at ${path} must be an object`);
      }
      const required = new Set(Array.isArray(o.required) ? (o.required as string[]) : []);
      // A record with required keys (e.g. keyed by an enum): the required keys become declared properties
      // valued by additionalProperties.
      if (Object.keys(propsIn).length === 0 && required.size && o.additionalProperties !== undefined && o.additionalProperties !== false) {
        const keysOk = o.propertyNames === undefined || [...required].every((r) => keyMatches(o.propertyNames, r, path));
        if (!keysOk) throw unsupportedSchema(`a required key that "propertyNames" refuses (at ${path})`);
        propsIn = Object.fromEntries([...required].map((r) => [r, o.additionalProperties]));
      }
      for (const r of required) {
        if (!(r in propsIn)) throw unsupportedSchema(`a required property "${r}" not declared in properties (at ${path})`);
      }
      const props: Prop[] = Object.entries(propsIn).map(([key, ps]) => ({
        key,
        keyBytes: enc.encode(JSON.stringify(key).slice(1, -1)),
        node: compile(ps, ctx, `${path}/properties/${key}`),
        req: required.has(key),
      }));
      // Declared properties: only they are generated (valid whatever additionalProperties says).
      // No properties: free keys, valued by additionalProperties (a schema, or any value when absent/true).
      if (props.length && o.propertyNames !== undefined) {
        // declared keys are generated: each must satisfy propertyNames
        const kn = keyNode(o.propertyNames, ctx, `${path}/propertyNames`);
        for (const p of props) {
          if (!keyAccepted(kn, p.key)) {
            throw unsupportedSchema(`a declared property "${p.key}" that "propertyNames" refuses (at ${path})`);
          }
        }
      }
      let free: Node | undefined;
      let keys: (Node & { k: 'str' }) | undefined;
      if (props.length === 0 && o.additionalProperties !== false) {
        free = o.additionalProperties === undefined || o.additionalProperties === true
          ? anyValue(ctx)
          : compile(o.additionalProperties, ctx, `${path}/additionalProperties`);
        if (o.propertyNames !== undefined) keys = keyNode(o.propertyNames, ctx, `${path}/propertyNames`);
      }
      return { k: 'obj', id: id(ctx), props, free, keys };
    }
    default:
      throw new ServiceError(400, 'invalid_request', `response schema: unknown type "${t}" at ${path}`);
  }
}

const BINARY_FRACTIONS = new Set([0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625]);

function compileNumber(int: boolean, o: Record<string, unknown>, ctx: Ctx, path: string): Node {
  let min = num(o.minimum, 'minimum', path);
  let max = num(o.maximum, 'maximum', path);
  // draft 4 writes exclusive bounds as booleans beside minimum/maximum
  const exMin = typeof o.exclusiveMinimum === 'boolean'
    ? (o.exclusiveMinimum ? min : undefined)
    : num(o.exclusiveMinimum, 'exclusiveMinimum', path);
  const exMax = typeof o.exclusiveMaximum === 'boolean'
    ? (o.exclusiveMaximum ? max : undefined)
    : num(o.exclusiveMaximum, 'exclusiveMaximum', path);
  if (o.exclusiveMinimum === true) min = undefined;
  if (o.exclusiveMaximum === true) max = undefined;
  const mult = num(o.multipleOf, 'multipleOf', path);
  if (mult !== undefined && !(mult > 0)) {
    throw new ServiceError(400, 'invalid_request', `response schema: "multipleOf" at ${path} must be positive`);
  }
  if (min === undefined && max === undefined && exMin === undefined && exMax === undefined && mult === undefined) {
    return { k: 'num', id: id(ctx), int, nonNeg: false, positive: false };
  }
  const scale = int ? 1n : 1_000_000n;
  // Validators divide by multipleOf in floating point: only integers and binary fractions divide exactly.
  let m: bigint | undefined;
  if (mult !== undefined) {
    if (Number.isInteger(mult)) m = BigInt(mult) * scale;
    else if (BINARY_FRACTIONS.has(mult) && !int) m = scaled(mult, scale, 'floor');
    else if (int && Number.isInteger(1 / mult)) m = undefined; // every integer is a multiple of 1/n
    else throw unsupportedSchema(`"multipleOf" ${mult} (only integers and binary fractions such as 0.5 or 0.25, at ${path})`);
  }
  const bigMax = (a: bigint | undefined, b: bigint | undefined) => (a === undefined ? b : b === undefined ? a : a > b ? a : b);
  const bigMin = (a: bigint | undefined, b: bigint | undefined) => (a === undefined ? b : b === undefined ? a : a < b ? a : b);
  const lo = bigMax(
    min === undefined ? undefined : scaled(min, scale, 'ceil'),
    exMin === undefined ? undefined : scaled(exMin, scale, 'floor') + 1n,
  );
  const hi = bigMin(
    max === undefined ? undefined : scaled(max, scale, 'floor'),
    exMax === undefined ? undefined : scaled(exMax, scale, 'ceil') - 1n,
  );
  const range: NumRange = { scale, lo, hi, mult: m };
  if (!Number.isFinite(restLen(range, { neg: false, ph: 0, I: 0n, di: 0, F: 0n, nf: 0 }))) {
    throw unsupportedSchema(`a numeric range with no value of at most 15 integer and 6 fraction digits (at ${path})`);
  }
  return { k: 'num', id: id(ctx), int, nonNeg: false, positive: false, range };
}

/** `pattern` and `format` of a string, as one automaton over its content (undefined: any content). */
function stringDfa(o: Record<string, unknown>, path: string): Dfa | undefined {
  let fmt: Dfa | undefined;
  if (o.format !== undefined) {
    const src = FORMAT_PATTERNS[o.format as string];
    if (typeof o.format !== 'string' || !src) {
      throw unsupportedSchema(
        `the string format "${String(o.format)}" (at ${path}; supported: ${Object.keys(FORMAT_PATTERNS).join(', ')})`,
      );
    }
    fmt = patternDfa(src, `format "${o.format}"`);
  }
  if (o.pattern !== undefined) {
    if (typeof o.pattern !== 'string') {
      throw new ServiceError(400, 'invalid_request', `response schema: "pattern" at ${path} must be a string`);
    }
    try {
      new RegExp(o.pattern, 'u');
    } catch {
      throw new ServiceError(400, 'invalid_request', `response schema: "pattern" at ${path} is not a valid regular expression`);
    }
    return prune(patternDfa(o.pattern, 'pattern', fmt), `pattern (at ${path})`);
  }
  return fmt && prune(fmt, `format (at ${path})`);
}

/** propertyNames as a key automaton: a string schema (pattern, format, lengths) or an enum/const of keys. */
function keyNode(s: unknown, ctx: Ctx, path: string): Node & { k: 'str' } {
  if (s === true || (s && typeof s === 'object' && Object.keys(s).every((k) => ANNOTATIONS.has(k) || k === 'type'))) {
    if (s !== true && (s as Record<string, unknown>).type !== undefined && (s as Record<string, unknown>).type !== 'string') {
      throw unsupportedSchema(`"propertyNames" of a type other than string (at ${path})`);
    }
    return { k: 'str', id: id(ctx), min: 0, max: Infinity };
  }
  if (!s || typeof s !== 'object') throw unsupportedSchema(`this "propertyNames" (at ${path})`);
  const o = s as Record<string, unknown>;
  const values = 'const' in o ? [o.const] : Array.isArray(o.enum) ? o.enum : undefined;
  if (values) {
    if (!values.every((v) => typeof v === 'string' && /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(v))) {
      throw unsupportedSchema(`"propertyNames" keys with characters other than printable ASCII (at ${path})`);
    }
    const alts = (values as string[]).map((v) => v.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|');
    const dfa = prune(patternDfa(`^(?:${alts})$`, 'propertyNames'), `propertyNames (at ${path})`);
    return { k: 'str', id: id(ctx), min: 0, max: Infinity, dfa, memo: new Map() };
  }
  const node = compile(s, ctx, path);
  if (node.k !== 'str') throw unsupportedSchema(`this "propertyNames" (only string schemas, at ${path})`);
  return node;
}

function keyAccepted(kn: Node & { k: 'str' }, key: string): boolean {
  const len = [...key].length;
  if (len < kn.min || len > kn.max) return false;
  if (!kn.dfa) return true;
  let q = 0;
  for (const ch of new TextEncoder().encode(key)) {
    q = stepDfa(kn.dfa, q, ch);
    if (q < 0) return false;
  }
  return kn.dfa.accept[q] === 1;
}

function keyMatches(names: unknown, key: string, path: string): boolean {
  if (names === true || names === undefined) return true;
  const o = names as Record<string, unknown>;
  if ('const' in o) return o.const === key;
  if (Array.isArray(o.enum)) return o.enum.includes(key);
  const others = Object.keys(o).filter((k) => !ANNOTATIONS.has(k) && k !== 'type');
  if (others.length) throw unsupportedSchema(`"propertyNames" with "${others[0]}" on a record with required keys (at ${path})`);
  return true;
}

/**
 * allOf (and keywords beside it) merged into one schema: $refs resolved, properties merged (a property in
 * several becomes an allOf of them), required joined, bounds tightened, types intersected. Keywords that
 * cannot be merged exactly (two patterns, two formats) are refused by name.
 */
function mergeAllOf(o: Record<string, unknown>, ctx: Ctx, path: string, depth = 0): Record<string, unknown> {
  if (depth > 16) throw unsupportedSchema(`"allOf" over a recursive "$ref" (at ${path})`);
  const { allOf, ...rest } = o;
  const parts: Record<string, unknown>[] = [];
  const add = (s: unknown) => {
    if (s === true) return;
    if (!s || typeof s !== 'object' || Array.isArray(s)) {
      throw unsupportedSchema(`an "allOf" member that is not a schema object (at ${path})`);
    }
    let x = s as Record<string, unknown>;
    if (typeof x.$ref === 'string') {
      const { $ref, ...others } = x;
      add(resolvePointer(ctx.root, $ref as string));
      x = others;
    }
    if (Array.isArray(x.allOf)) x = mergeAllOf(x, ctx, path, depth + 1);
    parts.push(x);
  };
  for (const s of allOf as unknown[]) add(s);
  add(rest);
  const out: Record<string, unknown> = {};
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      if (ANNOTATIONS.has(k) || k === '$defs' || k === 'definitions') continue;
      if (!(k in out)) {
        out[k] = v;
        continue;
      }
      const cur = out[k];
      switch (k) {
        case 'properties': {
          const merged: Record<string, unknown> = { ...(cur as object) };
          for (const [pk, pv] of Object.entries(v as object)) merged[pk] = pk in merged ? { allOf: [merged[pk], pv] } : pv;
          out[k] = merged;
          break;
        }
        case 'required':
          out[k] = [...new Set([...(cur as string[]), ...(v as string[])])];
          break;
        case 'type': {
          const a = [cur].flat() as string[];
          const b = [v].flat() as string[];
          const both = a.filter((t) => b.includes(t) || (t === 'integer' && b.includes('number'))).concat(
            b.filter((t) => t === 'integer' && a.includes('number')),
          );
          if (!both.length) throw unsupportedSchema(`"allOf" with disjoint types (at ${path})`);
          out[k] = [...new Set(both)];
          break;
        }
        case 'minimum':
        case 'exclusiveMinimum':
        case 'minLength':
        case 'minItems':
          out[k] = Math.max(cur as number, v as number);
          break;
        case 'maximum':
        case 'exclusiveMaximum':
        case 'maxLength':
        case 'maxItems':
          out[k] = Math.min(cur as number, v as number);
          break;
        case 'enum':
          out[k] = (cur as unknown[]).filter((x) => (v as unknown[]).some((y) => JSON.stringify(y) === JSON.stringify(x)));
          break;
        case 'additionalProperties':
          if (cur === false || v === false) out[k] = false;
          else if (JSON.stringify(cur) !== JSON.stringify(v)) out[k] = { allOf: [cur, v] };
          break;
        default:
          if (JSON.stringify(cur) !== JSON.stringify(v)) {
            throw unsupportedSchema(`"allOf" whose schemas both set "${k}" differently (at ${path})`);
          }
      }
    }
  }
  // A property declared by one member but closed off by another's additionalProperties: false would be
  // refused by the validator; keep only the declared ones (subset of what validates).
  return out;
}

/** oneOf is accepted only when no value can match two alternatives: different JSON types, distinct literals, or objects told apart by a required constant property (a discriminator). */
function checkDisjoint(alts: Node[], path: string) {
  type Kind = { kind: string; text?: string; obj?: Node & { k: 'obj' } };
  const dec = new TextDecoder();
  const kinds = (n: Node): Kind[] => {
    if (n.k === 'any') return n.alts.flatMap(kinds);
    if (n.k === 'obj') return [{ kind: 'obj', obj: n }];
    if (n.k !== 'lit') return [{ kind: n.k === 'num' ? 'num' : n.k }];
    return n.texts.map((t) => {
      const text = dec.decode(t);
      const v = JSON.parse(text);
      const kind = v === null || typeof v === 'boolean'
        ? text
        : typeof v === 'string'
        ? 'str'
        : typeof v === 'number'
        ? 'num'
        : Array.isArray(v)
        ? 'arr'
        : 'obj';
      return { kind, text };
    });
  };
  const litTexts = (n: Node): Set<string> | undefined => {
    if (n.k === 'lit') return new Set(n.texts.map((t) => dec.decode(t)));
    if (n.k === 'any' && n.alts.length === 1) return litTexts(n.alts[0]);
    return undefined;
  };
  const discriminated = (a: Node & { k: 'obj' }, b: Node & { k: 'obj' }) =>
    a.props.some((pa) => {
      if (!pa.req) return false;
      const pb = b.props.find((p) => p.key === pa.key && p.req);
      const ta = litTexts(pa.node);
      const tb = pb && litTexts(pb.node);
      return !!ta && !!tb && [...ta].every((t) => !tb.has(t));
    });
  const per = alts.map(kinds);
  for (let i = 0; i < per.length; i++) {
    for (let j = i + 1; j < per.length; j++) {
      for (const a of per[i]) {
        for (const b of per[j]) {
          if (a.kind !== b.kind) continue;
          if (a.obj && b.obj && discriminated(a.obj, b.obj)) continue;
          if (a.text === undefined || b.text === undefined || a.text === b.text) {
            throw unsupportedSchema(
              `"oneOf" whose alternatives can match the same value (at ${path}; use anyOf, or tell objects apart by a required "const" property)`,
            );
          }
        }
      }
    }
  }
}
/** Every node must have a finite shortest text (a required recursive $ref loop has none). */
function checkFinite(node: Node) {
  if (!Number.isFinite(minLengths(node).get(node.id) ?? Infinity)) {
    throw unsupportedSchema('a schema whose required properties recurse without end');
  }
}

/** Shortest JSON text length of every node reachable from `root` (fixpoint over recursive refs). */
export function minLengths(root: Node): Map<number, number> {
  const all: Node[] = [];
  const seen = new Set<number>();
  const visit = (n: Node) => {
    if (seen.has(n.id)) return;
    seen.add(n.id);
    all.push(n);
    if (n.k === 'obj') {
      n.props.forEach((p) => visit(p.node));
      if (n.free) visit(n.free);
      if (n.keys) visit(n.keys);
    } else if (n.k === 'arr') {
      visit(n.items);
      n.prefix?.forEach(visit);
    } else if (n.k === 'any') n.alts.forEach(visit);
  };
  visit(root);
  const len = new Map<number, number>(all.map((n) => [n.id, Infinity]));
  const L = (n: Node) => len.get(n.id)!;
  for (let changed = true; changed;) {
    changed = false;
    for (const n of all) {
      let v: number;
      switch (n.k) {
        case 'obj': {
          const req = n.props.filter((p) => p.req);
          v = 2 + req.reduce((a, p) => a + p.keyBytes.length + 3 + L(p.node), 0) + Math.max(0, req.length - 1);
          break;
        }
        case 'arr': {
          v = 2 + Math.max(0, n.min - 1);
          for (let i = 0; i < n.min; i++) v += L(itemAt(n, i));
          break;
        }
        case 'str':
          v = 2 + (n.dfa ? shortestAtLeast(n.dfa, 0, n.min, n.memo!) : n.min);
          break;
        case 'num':
          v = n.range ? restLen(n.range, { neg: false, ph: 0, I: 0n, di: 0, F: 0n, nf: 0 }) : 1;
          break;
        case 'lit':
          v = Math.min(...n.texts.map((t) => t.length));
          break;
        case 'any':
          v = Math.min(Infinity, ...n.alts.map(L));
          break;
      }
      if (v < L(n)) {
        len.set(n.id, v);
        changed = true;
      }
    }
  }
  return len;
}

/** The schema of the array element at index i (a tuple position, or items). */
export function itemAt(n: Node & { k: 'arr' }, i: number): Node {
  return n.prefix && i < n.prefix.length ? n.prefix[i] : n.items;
}
