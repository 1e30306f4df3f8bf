/**
 * API keys: created with a token shown once, stored only as a SHA-256 hash, revocable.
 * Keys are required once an active key exists (or when the server is told to require them).
 */
import { type ApiKeyRow, countActiveKeys, findKey, findKeyByHash, insertKey, listKeys, revokeKey, touchKey } from '../../store/keys.ts';
import type { Db } from '../../store/schema.ts';
import { invalidArgument, notFound } from '../errors.ts';
import { bytesToBase64Url } from '../base64.ts';

export type Role = 'admin' | 'user';
export const TOKEN_PREFIX = 'svc_';

/** Who a request acts for: an API key, or the local anonymous owner while keys are not required. */
export interface Owner {
  id: string;
  role: Role;
  keyId: string | null;
  name: string;
}
export const LOCAL_OWNER: Owner = { id: 'local', role: 'admin', keyId: null, name: 'local' };

export interface PublicKey {
  id: string;
  name: string;
  role: Role;
  token_prefix: string;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const iso = (ms: number | null) => (ms == null ? null : new Date(Number(ms)).toISOString());
const toPublic = (r: ApiKeyRow): PublicKey => ({
  id: r.id,
  name: r.name,
  role: r.role,
  token_prefix: r.token_prefix,
  created_at: iso(r.created_at)!,
  revoked_at: iso(r.revoked_at),
  last_used_at: iso(r.last_used_at),
});

export async function hashToken(token: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

const CACHE_MS = 2000; // short, so a revocation on another node of a fleet is honoured quickly
/** `last_used_at` is written at most this often per key: a use is recorded, not every request a DB write. */
export const TOUCH_MS = 60_000;

export class KeyService {
  #activeCount: { n: number; at: number } | null = null;
  #verified = new Map<string, { owner: Owner | null; at: number }>();
  /** Key id → when this node last wrote its `last_used_at`. */
  #touched = new Map<string, number>();

  constructor(private db: Db, private requireAlways: boolean) {}

  async create(input: { name: string; role?: Role }): Promise<PublicKey & { token: string }> {
    const name = input.name.trim();
    if (!name) throw invalidArgument('name must not be empty', [{ field: 'name', message: 'required' }]);
    // The first key is an admin key unless said otherwise, so nobody locks themselves out.
    const role = input.role ?? ((await this.activeCount(true)) === 0 ? 'admin' : 'user');
    const token = TOKEN_PREFIX + bytesToBase64Url(crypto.getRandomValues(new Uint8Array(32)));
    const row: ApiKeyRow = {
      id: `key_${bytesToBase64Url(crypto.getRandomValues(new Uint8Array(9)))}`,
      name,
      role,
      token_hash: await hashToken(token),
      token_prefix: token.slice(0, 10),
      created_at: Date.now(),
      revoked_at: null,
      last_used_at: null,
    };
    await insertKey(this.db, row);
    this.#activeCount = null;
    return { ...toPublic(row), token };
  }

  async list(): Promise<PublicKey[]> {
    return (await listKeys(this.db)).map(toPublic);
  }

  async revoke(id: string): Promise<PublicKey> {
    const ok = await revokeKey(this.db, id, Date.now());
    const row = await findKey(this.db, id);
    if (!row) throw notFound(`API key '${id}' not found`);
    if (!ok && row.revoked_at == null) throw notFound(`API key '${id}' not found`);
    this.#activeCount = null;
    this.#verified.clear();
    return toPublic(row);
  }

  async activeCount(fresh = false): Promise<number> {
    const now = Date.now();
    if (fresh || !this.#activeCount || now - this.#activeCount.at > CACHE_MS) {
      this.#activeCount = { n: await countActiveKeys(this.db), at: now };
    }
    return this.#activeCount.n;
  }

  /** True when a request without a token must be refused. */
  async keysRequired(): Promise<boolean> {
    return this.requireAlways || (await this.activeCount()) > 0;
  }

  /** The owner of a token, or null when the token is unknown or revoked. */
  async verify(token: string): Promise<Owner | null> {
    // Every key we issue starts with the prefix: a foreign token (an OpenAI client's placeholder) is no key
    // of ours, known without hashing it or asking the database.
    if (!token.startsWith(TOKEN_PREFIX)) return null;
    const now = Date.now();
    const hit = this.#verified.get(token);
    if (hit && now - hit.at < CACHE_MS) {
      if (hit.owner) await this.#touch(hit.owner.id, now);
      return hit.owner;
    }
    const row = await findKeyByHash(this.db, await hashToken(token));
    const owner = row && row.revoked_at == null ? { id: row.id, role: row.role, keyId: row.id, name: row.name } : null;
    if (this.#verified.size > 10_000) this.#verified.clear();
    this.#verified.set(token, { owner, at: now });
    // Another node of a fleet may have recorded a use a moment ago: then this one need not.
    if (row?.last_used_at != null && !this.#touched.has(row.id)) this.#touched.set(row.id, Number(row.last_used_at));
    if (owner) await this.#touch(owner.id, now);
    return owner;
  }

  /** Records a use of the key, at most once per TOUCH_MS; a failed write never fails the request. */
  async #touch(keyId: string, now: number): Promise<void> {
    const last = this.#touched.get(keyId);
    if (last !== undefined && now - last < TOUCH_MS) return;
    if (this.#touched.size > 10_000) this.#touched.clear();
    this.#touched.set(keyId, now);
    await touchKey(this.db, keyId, now).catch(() => {});
  }
}
