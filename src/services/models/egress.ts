/**
 * Egress policy: the hub hosts the server may talk to. A host is allowed when it equals an allowed
 * host or is a subdomain of one (the hub redirects LFS downloads to `cdn-lfs.hf.co`, `cas-bridge.xethub.hf.co`).
 */
import { invalidArgument, ServiceError } from '../errors.ts';

export const DEFAULT_ALLOWED_HOSTS: readonly string[] = ['huggingface.co', 'hf.co'];

export class EgressPolicy {
  readonly allowedHosts: readonly string[];

  constructor(allowedHosts: readonly string[] = DEFAULT_ALLOWED_HOSTS, extra: readonly string[] = []) {
    this.allowedHosts = [...allowedHosts, ...extra].map((h) => h.trim().toLowerCase()).filter(Boolean);
  }

  /** `host` may carry a port; ports are not part of the policy. */
  allows(host: string): boolean {
    const h = stripPort(host.toLowerCase());
    return this.allowedHosts.some((a) => {
      const allowed = stripPort(a);
      return h === allowed || h.endsWith(`.${allowed}`);
    });
  }

  /** A hub reference naming a host outside the policy: the caller's request can never succeed → 400. */
  assertReferenceHost(host: string): void {
    if (!this.allows(host)) {
      throw invalidArgument(`hub host '${host}' is not allowed by the egress policy (allowed: ${this.allowedHosts.join(', ')})`, {
        host,
        allowed_hosts: this.allowedHosts,
      });
    }
  }

  /** The hub sent us somewhere the policy forbids (a redirect): refused by policy, retrying cannot help → 403. */
  assertUrl(url: URL): void {
    if (!this.allows(url.host)) {
      throw new ServiceError(403, 'egress_denied', `the model hub redirected to '${url.host}', which the egress policy does not allow`);
    }
  }
}

const stripPort = (h: string) => (h.startsWith('[') ? h.replace(/]:\d+$/, ']') : h.replace(/:\d+$/, ''));
