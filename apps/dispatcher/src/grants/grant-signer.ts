import { ToolGrants, type Identity } from '@mesh/contract';
import type { MeshMetrics } from '@mesh/telemetry';
import type { DispatcherConfig } from '../config/dispatcher.config.js';
import { grantClaims } from './grant-claims.js';
import type { GrantKeys } from './grant-keys.js';

/** The issuer of grants and tool tokens: DISPATCHER_ISSUER, else the public URL, else localhost and the port. */
export function grantIssuer(config: Pick<DispatcherConfig, 'DISPATCHER_ISSUER' | 'DISPATCHER_PUBLIC_URL' | 'DISPATCHER_PORT'>): string {
  const url = config.DISPATCHER_ISSUER ?? config.DISPATCHER_PUBLIC_URL ?? `http://localhost:${config.DISPATCHER_PORT}`;
  return url.replace(/\/+$/, '');
}

/** Signs the grant each run command carries (docs/dispatcher.md, "Grants and tool tokens"). */
export class GrantSigner {
  /** The token endpoint's URL: the audience of every grant. */
  readonly tokenEndpoint: string;

  constructor(
    private readonly keys: GrantKeys,
    readonly issuer: string,
    private readonly ttlMs: number,
    private readonly metrics?: Pick<MeshMetrics, 'grantsSigned'>,
  ) {
    this.tokenEndpoint = `${issuer}${ToolGrants.tokenPath}`;
  }

  /** The grant of a turn whose command carries `identity`. */
  grantFor(identity: Identity, nowMs = Date.now()): string {
    const grant = this.keys.signJwt(ToolGrants.grantTyp, {
      ...grantClaims(identity, this.issuer, this.tokenEndpoint, { nowMs, ttlMs: this.ttlMs }),
    });
    this.metrics?.grantsSigned.inc();
    return grant;
  }
}
