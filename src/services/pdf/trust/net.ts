/**
 * Outbound requests of the trust services (TSA, OCSP, CRL) under an egress policy: only the hosts an
 * operator allowed are reached, so a PDF or a caller cannot make the server fetch arbitrary URLs.
 */
import { EgressPolicy } from '../../models/egress.ts';
import { invalidArgument, ServiceError } from '../../errors.ts';

export interface TrustNet {
  /** hosts allowed (empty: no outbound request at all) */
  readonly allowedHosts: readonly string[];
  allows(url: string): boolean;
  /** POST or GET with a deadline; throws `upstream_failed` (502) on a transport or HTTP failure */
  request(
    url: string,
    init: { method?: string; body?: Uint8Array; contentType?: string; accept?: string; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<Uint8Array>;
}

export function trustNet(allowedHosts: readonly string[]): TrustNet {
  const policy = new EgressPolicy(allowedHosts);
  const allows = (url: string) => {
    try {
      const u = new URL(url);
      return (u.protocol === 'http:' || u.protocol === 'https:') && policy.allows(u.host);
    } catch {
      return false;
    }
  };
  return {
    allowedHosts: policy.allowedHosts,
    allows,
    async request(url, init) {
      if (!allows(url)) {
        throw invalidArgument(
          `the URL ${url} is not allowed by the egress policy (allowed hosts: ${
            policy.allowedHosts.join(', ') || 'none; set SVC_PDF_TRUST_ALLOWED_HOSTS'
          }).`,
          { url },
        );
      }
      const signals = [AbortSignal.timeout(init.timeoutMs ?? 15_000), ...(init.signal ? [init.signal] : [])];
      let res: Response;
      try {
        res = await fetch(url, {
          method: init.method ?? (init.body ? 'POST' : 'GET'),
          body: init.body as BodyInit | undefined,
          headers: { ...(init.contentType ? { 'content-type': init.contentType } : {}), ...(init.accept ? { accept: init.accept } : {}) },
          redirect: 'manual',
          signal: AbortSignal.any(signals),
        });
      } catch (e) {
        throw new ServiceError(502, 'upstream_failed', `${url} could not be reached: ${(e as Error).message}`);
      }
      if (res.status !== 200) throw new ServiceError(502, 'upstream_failed', `${url} answered HTTP ${res.status}.`);
      return new Uint8Array(await res.arrayBuffer());
    },
  };
}
