/**
 * Area tickets: what an operator gets for signing in to the admin console with an admin API key (plus the
 * second factor once enrolled). The ticket travels in an HttpOnly cookie; only its SHA-256 is stored, with
 * a CSRF token bound to it that the console echoes in a header. Valid 12 hours (docs/admin-console.md).
 */
import { deleteExpiredTickets, deleteTicket, deleteTicketsOfKey, findTicket, insertTicket } from '../../store/admin-auth.ts';
import { findKey, touchKey } from '../../store/keys.ts';
import type { Db } from '../../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { hashToken, type KeyService, type Owner } from '../keys/api-keys.ts';
import type { SignInLimiter } from './sign-in-limiter.ts';
import type { TwoFactor } from './two-factor.ts';
import { bytesToBase64Url } from '../base64.ts';

export const TICKET_VALIDITY_MS = 12 * 3600_000;
const CACHE_MS = 2000; // a logout or revocation on another node of a fleet is honoured within this

const randomToken = () => bytesToBase64Url(crypto.getRandomValues(new Uint8Array(32)));

export interface SignInInput {
  key: string;
  code?: string;
  recovery_code?: string;
  persist: boolean;
  client: string;
}
export interface IssuedTicket {
  ticket: string;
  csrf_token: string;
  expires_at: string;
  persist: boolean;
  key: { id: string; name: string };
  second_factor: 'none' | 'totp' | 'recovery';
}
export interface TicketSession {
  owner: Owner;
  csrfToken: string;
  expiresAt: number;
  persist: boolean;
}

const badCredentials = () => new ServiceError(401, 'invalid_credentials', 'sign-in needs an active admin API key');

export class AreaTickets {
  #cache = new Map<string, { session: TicketSession | null; at: number }>();

  constructor(private db: Db, private keys: KeyService, private twoFactor: TwoFactor, private limiter: SignInLimiter) {}

  async signIn(input: SignInInput): Promise<IssuedTicket> {
    const clientBucket = `client:${input.client}`;
    this.limiter.check(clientBucket);
    const owner = await this.keys.verify(input.key.trim());
    if (!owner || owner.role !== 'admin' || !owner.keyId) {
      this.limiter.fail(clientBucket);
      throw badCredentials();
    }
    const keyBucket = `key:${owner.keyId}`;
    let second: IssuedTicket['second_factor'] = 'none';
    if (await this.twoFactor.enabled(owner.keyId)) {
      this.limiter.check(keyBucket);
      if (!input.code && !input.recovery_code) {
        throw new ServiceError(401, 'second_factor_required', 'this key has two-factor sign-in: send a 6-digit code or a recovery code');
      }
      try {
        second = await this.twoFactor.verify(owner.keyId, input);
      } catch (e) {
        this.limiter.fail(clientBucket, keyBucket);
        throw e;
      }
      this.limiter.succeed(keyBucket);
    }
    this.limiter.succeed(clientBucket);
    const now = Date.now();
    const ticket = randomToken();
    const csrf_token = randomToken();
    await deleteExpiredTickets(this.db, now);
    await insertTicket(this.db, {
      id_hash: await hashToken(ticket),
      key_id: owner.keyId,
      csrf_token,
      persist: input.persist ? 1 : 0,
      created_at: now,
      expires_at: now + TICKET_VALIDITY_MS,
    });
    await touchKey(this.db, owner.keyId, now);
    return {
      ticket,
      csrf_token,
      expires_at: new Date(now + TICKET_VALIDITY_MS).toISOString(),
      persist: input.persist,
      key: { id: owner.keyId, name: owner.name },
      second_factor: second,
    };
  }

  /** The session a ticket stands for, or null when unknown, expired, or its key is revoked or no longer admin. */
  async session(ticket: string): Promise<TicketSession | null> {
    const now = Date.now();
    const hit = this.#cache.get(ticket);
    if (hit && now - hit.at < CACHE_MS && (!hit.session || hit.session.expiresAt > now)) return hit.session;
    const row = await findTicket(this.db, await hashToken(ticket));
    let session: TicketSession | null = null;
    if (row && Number(row.expires_at) > now) {
      const key = await findKey(this.db, row.key_id);
      if (key && key.revoked_at == null && key.role === 'admin') {
        session = {
          owner: { id: key.id, role: key.role, keyId: key.id, name: key.name },
          csrfToken: row.csrf_token,
          expiresAt: Number(row.expires_at),
          persist: row.persist === 1,
        };
      }
    }
    if (this.#cache.size > 1000) this.#cache.clear();
    this.#cache.set(ticket, { session, at: now });
    return session;
  }

  async logout(ticket: string): Promise<void> {
    this.#cache.delete(ticket);
    await deleteTicket(this.db, await hashToken(ticket));
  }

  /** Ends every console session of a key (after its second factor changes). */
  async logoutKey(keyId: string): Promise<void> {
    this.#cache.clear();
    await deleteTicketsOfKey(this.db, keyId);
  }
}
