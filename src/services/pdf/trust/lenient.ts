/**
 * Reading what a PDF or a responder sent: data that does not parse, or a signature that cannot be checked,
 * counts as absent or unverified, never as an error of the request.
 */
import * as pkijs from 'pkijs';
import { ab } from './cms.ts';

/** What `read` returns, or undefined when it throws (malformed DER, a date that does not decode). */
export function parsedOrUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** A signature check; one that throws (an unsupported or malformed signature) is one that fails. */
export async function verifies(check: () => Promise<boolean>): Promise<boolean> {
  try {
    return await check();
  } catch {
    return false;
  }
}

/** The DER blobs that are certificates, parsed; the others are skipped. */
export function certificatesOf(ders: Iterable<Uint8Array>): pkijs.Certificate[] {
  const out: pkijs.Certificate[] = [];
  for (const der of ders) {
    const c = parsedOrUndefined(() => pkijs.Certificate.fromBER(ab(der)));
    if (c) out.push(c);
  }
  return out;
}
