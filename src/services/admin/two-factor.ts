/**
 * TOTP second factor of an admin key (RFC 6238, 30 s steps, 6 digits, SHA-1 as authenticator apps expect):
 * setup draws the otpauth URI as an SVG QR code, a 6-digit code confirms it and yields ten one-time
 * recovery codes, shown once and stored as SHA-256 digests. A code (TOTP or recovery) disables it.
 */
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import { consumeTwoFactor, deleteTwoFactor, findTwoFactor, saveTwoFactor } from '../../store/admin-auth.ts';
import type { Db } from '../../store/schema.ts';
import { hashToken } from '../keys/api-keys.ts';
import { ServiceError } from '../errors.ts';

const ISSUER = 'svc';
const RECOVERY_CODES = 10;
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i: codes are read and typed by people

export interface TwoFactorSetup {
  secret: string;
  otpauth_url: string;
  qrSvg: string;
}
export interface TwoFactorStatus {
  enabled: boolean;
  pending: boolean;
  recovery_codes_left: number;
}

const totpOf = (secret: string, label: string) =>
  new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });

function recoveryCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  const s = Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join('');
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
const normalizeRecovery = (code: string) => code.trim().toLowerCase().replace(/[^a-z0-9]/g, '');

export const invalidCode = () => new ServiceError(401, 'invalid_second_factor', 'the code is wrong, expired or already used');

export class TwoFactor {
  constructor(private db: Db) {}

  async status(keyId: string): Promise<TwoFactorStatus> {
    const row = await findTwoFactor(this.db, keyId);
    return {
      enabled: row?.confirmed_at != null,
      pending: !!row && row.confirmed_at == null,
      recovery_codes_left: row?.confirmed_at != null ? (JSON.parse(row.recovery_hashes) as string[]).length : 0,
    };
  }

  async enabled(keyId: string): Promise<boolean> {
    return (await findTwoFactor(this.db, keyId))?.confirmed_at != null;
  }

  /** Starts (or restarts) an enrollment; refused while a confirmed factor exists. */
  async setup(keyId: string, label: string): Promise<TwoFactorSetup> {
    if (await this.enabled(keyId)) {
      throw new ServiceError(409, 'two_factor_already_enabled', 'two-factor sign-in is already enabled for this key; disable it first');
    }
    const secret = new Secret({ size: 20 }).base32;
    await saveTwoFactor(this.db, {
      key_id: keyId,
      secret,
      confirmed_at: null,
      recovery_hashes: '[]',
      last_step: null,
      created_at: Date.now(),
    });
    const otpauth_url = totpOf(secret, label).toString();
    const qrSvg = await QRCode.toString(otpauth_url, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
    return { secret, otpauth_url, qrSvg };
  }

  /** Confirms a pending enrollment with a 6-digit code; returns the recovery codes (the only time they are shown). */
  async confirm(keyId: string, code: string): Promise<{ recovery_codes: string[] }> {
    const row = await findTwoFactor(this.db, keyId);
    if (!row || row.confirmed_at != null) {
      throw new ServiceError(409, 'no_pending_enrollment', 'no two-factor enrollment is pending: call POST /svc/v1/admin/2fa/setup first');
    }
    const step = this.#step(row.secret, code);
    if (step === null) throw invalidCode();
    const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode);
    const hashes = await Promise.all(codes.map((c) => hashToken(normalizeRecovery(c))));
    // the confirming code is not spent: the operator may sign in with it right away
    await saveTwoFactor(this.db, { ...row, confirmed_at: Date.now(), recovery_hashes: JSON.stringify(hashes), last_step: null });
    return { recovery_codes: codes };
  }

  /** Checks and consumes a TOTP code or a recovery code; throws 401 invalid_second_factor otherwise. */
  async verify(keyId: string, input: { code?: string; recovery_code?: string }): Promise<'totp' | 'recovery'> {
    const row = await findTwoFactor(this.db, keyId);
    if (!row || row.confirmed_at == null) throw invalidCode();
    const before = { recovery_hashes: row.recovery_hashes, last_step: row.last_step };
    if (input.code) {
      const step = this.#step(row.secret, input.code);
      if (step === null || (row.last_step != null && step <= row.last_step)) throw invalidCode(); // a code is good once
      if (!(await consumeTwoFactor(this.db, keyId, before, { ...before, last_step: step }))) throw invalidCode();
      return 'totp';
    }
    if (input.recovery_code) {
      const h = await hashToken(normalizeRecovery(input.recovery_code));
      const hashes = JSON.parse(row.recovery_hashes) as string[];
      if (!hashes.includes(h)) throw invalidCode();
      if (
        !(await consumeTwoFactor(this.db, keyId, before, { ...before, recovery_hashes: JSON.stringify(hashes.filter((x) => x !== h)) }))
      ) throw invalidCode();
      return 'recovery';
    }
    throw new ServiceError(401, 'second_factor_required', 'this key has two-factor sign-in: send a 6-digit code or a recovery code');
  }

  async disable(keyId: string, input: { code?: string; recovery_code?: string }): Promise<TwoFactorStatus> {
    const row = await findTwoFactor(this.db, keyId);
    if (row && row.confirmed_at != null) await this.verify(keyId, input);
    await deleteTwoFactor(this.db, keyId);
    return this.status(keyId);
  }

  /** The TOTP time step a 6-digit code matches (one step of clock drift either way), or null. */
  #step(secret: string, code: string): number | null {
    if (!/^\d{6}$/.test(code.trim())) return null;
    const now = Date.now();
    const delta = TOTP.validate({
      token: code.trim(),
      secret: Secret.fromBase32(secret),
      algorithm: 'SHA1',
      digits: 6,
      period: 30,
      timestamp: now,
      window: 1,
    });
    return delta === null ? null : Math.floor(now / 30_000) + delta;
  }
}
