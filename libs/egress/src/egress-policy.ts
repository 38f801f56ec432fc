import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { MeshError } from '@mesh/contract';

export interface EgressPolicyOptions {
  /** CIDRs (e.g. `127.0.0.1/32`) that are allowed even though they are private; tests use this. */
  allowCidrs?: string[];
  /** Schemes allowed; `https:` only unless development allows `http:`. */
  schemes?: string[];
  /** DNS lookup, injectable for unit tests. */
  lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
}

/** A URL that passed the policy, with the address to connect to (DNS is resolved once, here). */
export interface CheckedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * Refused by the egress policy: never retried. The message is safe to show the caller who gave the
 * URL: for a host name it never says what the name resolved to, nor whether it resolved at all
 * (that would map an internal DNS zone for anyone allowed to register a URL). `detail` says so, for
 * operators' logs only.
 */
export class EgressRefused extends MeshError {
  constructor(
    message: string,
    /** An allow-list entry (allowCidrs) might admit the target: a non-public address, or a name refused for its answers. */
    readonly allowListMayAdmit = false,
    /** What was found (the addresses and their ranges): for logs, never for the caller. */
    readonly detail: string = message,
  ) {
    super('EGRESS_REFUSED', message, { retryable: false });
    this.name = 'EgressRefused';
  }
}

/**
 * SSRF guard for every URL the platform calls on a user's behalf (push webhooks, JWKS, …):
 * only public unicast addresses, unless an allowlisted CIDR says otherwise. The WHATWG URL
 * parser already normalises decimal/octal/hex IPv4 forms (`http://2130706433/` is 127.0.0.1).
 */
export class EgressPolicy {
  private readonly allow: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  private readonly schemes: Set<string>;
  private readonly lookup: NonNullable<EgressPolicyOptions['lookup']>;

  constructor(opts: EgressPolicyOptions = {}) {
    this.allow = (opts.allowCidrs ?? []).map((c) => {
      try {
        return ipaddr.parseCIDR(c);
      } catch {
        throw new MeshError('CONFIG_INVALID', `invalid CIDR in egress allowlist: "${c}"`);
      }
    });
    this.schemes = new Set(opts.schemes ?? ['https:', 'http:']);
    this.lookup = opts.lookup ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
  }

  /** Parses, resolves and checks a URL; throws EgressRefused with the reason. */
  async check(raw: string): Promise<CheckedTarget> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new EgressRefused('not a valid URL');
    }
    if (!this.schemes.has(url.protocol)) throw new EgressRefused(`scheme ${url.protocol} is not allowed`);
    if (url.username || url.password) throw new EgressRefused('credentials in the URL are not allowed');
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (ipaddr.isValid(host)) {
      // The caller wrote the address: naming its range tells them nothing new.
      const refusal = this.refusalOf(host);
      if (refusal) throw new EgressRefused(`${host} (${refusal}) is not a public address`, true);
      return { url, address: host, family: host.includes(':') ? 6 : 4 };
    }
    // A name: one answer whether it does not resolve or resolves to a refused address.
    const refused = (detail: string) => new EgressRefused(`host ${host} does not resolve to public addresses only`, true, detail);
    let addresses: Array<{ address: string; family: number }>;
    try {
      addresses = await this.lookup(host);
    } catch (err) {
      throw refused(`host ${host} does not resolve: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (addresses.length === 0) throw refused(`host ${host} does not resolve`);
    // Every address must pass: a name resolving to one public and one private address is refused.
    for (const a of addresses) {
      const range = this.refusalOf(a.address);
      if (range) throw refused(`${host} resolves to ${a.address} (${range}), which is not a public address`);
    }
    const first = addresses[0];
    return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
  }

  /** The range of a refused address (`loopback`, `private`, …), or undefined when it may be called. */
  private refusalOf(address: string): string | undefined {
    let ip = ipaddr.parse(address);
    if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    if (this.allow.some(([net, bits]) => net.kind() === ip.kind() && ip.match([net, bits] as never))) return undefined;
    // IPv4-compatible IPv6 (`::a.b.c.d`, deprecated by RFC 4291) is "unicast" to ipaddr.js but
    // names an IPv4 host, e.g. `[::127.0.0.1]`: refused like any non-public form.
    // Only a form ipaddr.js takes for unicast: `::1` and `::` keep their own range (loopback, unspecified).
    const parts = ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).parts : [];
    const compatible = parts.length === 8 && parts.slice(0, 6).every((p) => p === 0);
    const range = ip.range() === 'unicast' && compatible ? 'ipv4Compatible' : ip.range();
    return range === 'unicast' ? undefined : range;
  }
}
