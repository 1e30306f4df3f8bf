/**
 * JSON Schema → grammar nodes for constrained decoding. The nodes describe a *subset* of the JSON texts the
 * schema accepts (compact JSON, object keys in declared order, no exponents, bounded digits), so that every
 * text the automaton can finish is valid. A keyword the automaton cannot enforce is refused by name
 * (`unsupportedSchema`), never ignored. Annotations (title, description, default, examples, ...) are skipped.
 */
import { ServiceError } from '../../errors.ts';

export type Node =
  | { k: 'obj'; id: number; props: Prop[]; free?: Node }
  | { k: 'arr'; id: number; items: Node; min: number; max: number }
  | { k: 'str'; id: number; min: number; max: number }
  | { k: 'num'; id: number; int: boolean; nonNeg: boolean; positive: boolean }
  | { k: 'lit'; id: number; texts: Uint8Array[] }
  | { k: 'any'; id: number; alts: Node[] };

export interface Prop {
  key: string;
  /** The key as it appears between the quotes (JSON-escaped, UTF-8). */
  keyBytes: Uint8Array;
  node: Node;
  req: boolean;
}

export const unsupportedSchema = (feature: string) =>
  new ServiceError(400, 'unsupported_schema', `response schema: ${feature} is not supported by constrained decoding (the output could not be guaranteed to match)`);

const enc = new TextEncoder();
const ANNOTATIONS = new Set([
  'title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly',
  '$anchor', 'strict', 'name', 'contentMediaType', 'contentEncoding',
]);
const MAX_INT_ENUM = 256;

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
    if (!cur || typeof cur !== 'object' || !(part in (cur as object))) throw new ServiceError(400, 'invalid_request', `response schema: $ref "${ref}" does not resolve`);
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function compile(s: unknown, ctx: Ctx, path: string): Node {
  if (s === true || (s && typeof s === 'object' && Object.keys(s).every((k) => ANNOTATIONS.has(k) || k === '$defs' || k === 'definitions'))) return anyValue(ctx);
  if (s === false) throw unsupportedSchema(`the schema false (at ${path}: no value matches it)`);
  if (!s || typeof s !== 'object' || Array.isArray(s)) throw new ServiceError(400, 'invalid_request', `response schema: ${path} is not a schema object`);
  const o = s as Record<string, unknown>;

  if (typeof o.$ref === 'string') {
    const others = Object.keys(o).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k) && k !== '$defs' && k !== 'definitions');
    if (others.length) throw unsupportedSchema(`"${others[0]}" beside "$ref" (at ${path})`);
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
  if (o.uniqueItems === true) throw unsupportedSchema(`the keyword "uniqueItems" (at ${path})`);

  if ('const' in o) return lit(ctx, [o.const]);
  if (Array.isArray(o.enum)) {
    if (o.enum.length === 0) throw unsupportedSchema(`an empty enum (at ${path})`);
    return lit(ctx, o.enum);
  }

  const union = (o.anyOf ?? o.oneOf) as unknown;
  if (union !== undefined) {
    if (!Array.isArray(union) || union.length === 0) throw new ServiceError(400, 'invalid_request', `response schema: anyOf/oneOf at ${path} must be a non-empty array`);
    if (o.type !== undefined || 'properties' in o || 'items' in o) throw unsupportedSchema(`"anyOf"/"oneOf" combined with sibling type keywords (at ${path})`);
    const alts = union.map((u, i) => compile(u, ctx, `${path}/${o.anyOf ? 'anyOf' : 'oneOf'}/${i}`));
    if (o.oneOf) checkDisjoint(alts, path);
    return { k: 'any', id: id(ctx), alts };
  }
  if (Array.isArray(o.allOf)) {
    if (o.allOf.length !== 1) throw unsupportedSchema(`"allOf" with more than one schema (at ${path})`);
    return compile(o.allOf[0], ctx, `${path}/allOf/0`);
  }

  const types = o.type === undefined ? undefined : Array.isArray(o.type) ? (o.type as string[]) : [o.type as string];
  if (!types) {
    if ('properties' in o || 'required' in o || 'additionalProperties' in o) return compileType('object', o, ctx, path);
    if ('items' in o) return compileType('array', o, ctx, path);
    return anyValue(ctx);
  }
  if (types.length === 1) return compileType(types[0], o, ctx, path);
  return { k: 'any', id: id(ctx), alts: types.map((t) => compileType(t, o, ctx, path)) };
}

const SUPPORTED = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'minLength', 'maxLength',
  'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs', 'definitions', 'minimum', 'maximum', 'exclusiveMinimum',
  'unevaluatedProperties', 'uniqueItems',
]);

function num(v: unknown, name: string, path: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ServiceError(400, 'invalid_request', `response schema: "${name}" at ${path} must be a number`);
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
      return { k: 'str', id: id(ctx), min: Math.ceil(min), max: Math.floor(max) };
    }
    case 'integer':
    case 'number':
      return compileNumber(t === 'integer', o, ctx, path);
    case 'array': {
      if (o.items === undefined && !('minItems' in o)) return { k: 'arr', id: id(ctx), items: anyValue(ctx), min: 0, max: Infinity };
      if (Array.isArray(o.items)) throw unsupportedSchema(`"items" as an array (tuple validation, at ${path})`);
      const min = num(o.minItems, 'minItems', path) ?? 0;
      const max = num(o.maxItems, 'maxItems', path) ?? Infinity;
      if (max < min) throw unsupportedSchema(`maxItems below minItems (at ${path})`);
      return { k: 'arr', id: id(ctx), items: o.items === undefined ? anyValue(ctx) : compile(o.items, ctx, `${path}/items`), min, max };
    }
    case 'object': {
      const propsIn = (o.properties ?? {}) as Record<string, unknown>;
      if (typeof propsIn !== 'object' || Array.isArray(propsIn)) throw new ServiceError(400, 'invalid_request', `response schema: properties at ${path} must be an object`);
      const required = new Set(Array.isArray(o.required) ? (o.required as string[]) : []);
      for (const r of required) if (!(r in propsIn)) throw unsupportedSchema(`a required property "${r}" not declared in properties (at ${path})`);
      const props: Prop[] = Object.entries(propsIn).map(([key, ps]) => ({
        key,
        keyBytes: enc.encode(JSON.stringify(key).slice(1, -1)),
        node: compile(ps, ctx, `${path}/properties/${key}`),
        req: required.has(key),
      }));
      // Declared properties: only they are generated (valid whatever additionalProperties says).
      // No properties: free keys, valued by additionalProperties (a schema, or any value when absent/true).
      let free: Node | undefined;
      if (props.length === 0 && o.additionalProperties !== false) {
        free = o.additionalProperties === undefined || o.additionalProperties === true ? anyValue(ctx) : compile(o.additionalProperties, ctx, `${path}/additionalProperties`);
      }
      return { k: 'obj', id: id(ctx), props, free };
    }
    default:
      throw new ServiceError(400, 'invalid_request', `response schema: unknown type "${t}" at ${path}`);
  }
}

function compileNumber(int: boolean, o: Record<string, unknown>, ctx: Ctx, path: string): Node {
  const min = num(o.minimum, 'minimum', path);
  const max = num(o.maximum, 'maximum', path);
  const exMin = num(o.exclusiveMinimum, 'exclusiveMinimum', path);
  if (max !== undefined) {
    // A bounded integer range is enforced as the list of its values.
    if (!int || min === undefined || exMin !== undefined) throw unsupportedSchema(`"maximum" (except on an integer with a "minimum" and at most ${MAX_INT_ENUM} values, at ${path})`);
    const lo = Math.ceil(min);
    const hi = Math.floor(max);
    if (hi < lo) throw unsupportedSchema(`an empty integer range (at ${path})`);
    if (hi - lo + 1 > MAX_INT_ENUM) throw unsupportedSchema(`"maximum" on an integer range of more than ${MAX_INT_ENUM} values (at ${path})`);
    return lit(ctx, Array.from({ length: hi - lo + 1 }, (_, i) => lo + i));
  }
  if (min !== undefined && min !== 0 && !(int && min === 1)) throw unsupportedSchema(`"minimum" other than 0 (or 1 on an integer) without "maximum" (at ${path})`);
  if (exMin !== undefined && (exMin !== 0 || !int)) throw unsupportedSchema(`"exclusiveMinimum" other than 0 on an integer (at ${path})`);
  if (exMin === 0 && min !== undefined) throw unsupportedSchema(`"exclusiveMinimum" with "minimum" (at ${path})`);
  return { k: 'num', id: id(ctx), int, nonNeg: min !== undefined || exMin !== undefined, positive: (int && min === 1) || exMin === 0 };
}

/** oneOf is accepted only when no value can match two alternatives: different JSON types, or distinct literals. */
function checkDisjoint(alts: Node[], path: string) {
  type Kind = { kind: string; text?: string };
  const dec = new TextDecoder();
  const kinds = (n: Node): Kind[] => {
    if (n.k === 'any') return n.alts.flatMap(kinds);
    if (n.k !== 'lit') return [{ kind: n.k }];
    return n.texts.map((t) => {
      const text = dec.decode(t);
      const v = JSON.parse(text);
      const kind = v === null || typeof v === 'boolean' ? text : typeof v === 'string' ? 'str' : typeof v === 'number' ? 'num' : Array.isArray(v) ? 'arr' : 'obj';
      return { kind, text };
    });
  };
  const per = alts.map(kinds);
  for (let i = 0; i < per.length; i++)
    for (let j = i + 1; j < per.length; j++)
      for (const a of per[i])
        for (const b of per[j])
          if (a.kind === b.kind && (a.text === undefined || b.text === undefined || a.text === b.text))
            throw unsupportedSchema(`"oneOf" whose alternatives can match the same value (at ${path}; use anyOf)`);
}

/** Every node must have a finite shortest text (a required recursive $ref loop has none). */
function checkFinite(node: Node) {
  if (!Number.isFinite(minLengths(node).get(node.id) ?? Infinity)) throw unsupportedSchema('a schema whose required properties recurse without end');
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
    } else if (n.k === 'arr') visit(n.items);
    else if (n.k === 'any') n.alts.forEach(visit);
  };
  visit(root);
  const len = new Map<number, number>(all.map((n) => [n.id, Infinity]));
  const L = (n: Node) => len.get(n.id)!;
  for (let changed = true; changed; ) {
    changed = false;
    for (const n of all) {
      let v: number;
      switch (n.k) {
        case 'obj': {
          const req = n.props.filter((p) => p.req);
          v = 2 + req.reduce((a, p) => a + p.keyBytes.length + 3 + L(p.node), 0) + Math.max(0, req.length - 1);
          break;
        }
        case 'arr':
          v = 2 + n.min * L(n.items) + Math.max(0, n.min - 1);
          break;
        case 'str':
          v = 2 + n.min;
          break;
        case 'num':
          v = 1;
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
