import { readFileSync } from 'node:fs';
import { MeshError } from '@mesh/contract';
import type { EgressPolicy } from '@mesh/egress';

/** Where a secret is read: an environment variable or a file (a mounted Kubernetes secret). */
export type SecretRef = { env: string } | { file: string };

/** How the bridge authenticates to one remote agent; secrets only by reference, never inline. */
export type RemoteCredentialsSpec =
  | { type: 'none' }
  | { type: 'bearer'; token: SecretRef }
  | { type: 'api-key'; header: string; key: SecretRef }
  | { type: 'oauth2-client-credentials'; tokenUrl: string; clientId: string; clientSecret: SecretRef; scope?: string; audience?: string };

export interface RemoteCredentials {
  /** Headers to add to one request to the remote agent. */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /** The remote answered 401: drop any cached token; the next headers() gets a new one. */
  rejected(): void;
  close(): void;
}

/** Reads a secret by reference; a missing one is a configuration error naming the reference, never the value. */
function readSecret(ref: SecretRef, env: NodeJS.ProcessEnv): string {
  if ('env' in ref) {
    const v = env[ref.env];
    if (!v) throw new MeshError('CONFIG_INVALID', `remote agent credentials: environment variable ${ref.env} is not set`);
    return v;
  }
  try {
    return readFileSync(ref.file, 'utf8').trim();
  } catch (err) {
    throw new MeshError('CONFIG_INVALID', `remote agent credentials: cannot read ${ref.file}: ${(err as Error).message}`);
  }
}

/**
 * Credentials for one remote agent. This version knows `none`, `bearer` and `api-key`; the secret
 * is read on each request, so a rotated file is picked up without a restart.
 */
export function remoteCredentials(spec: RemoteCredentialsSpec, opts: { env?: NodeJS.ProcessEnv; egress: EgressPolicy }): RemoteCredentials {
  const env = opts.env ?? process.env;
  const static_ = (make: () => Record<string, string>): RemoteCredentials => {
    make(); // a missing secret fails at start, not on the first task
    return { headers: async () => make(), rejected: () => undefined, close: () => undefined };
  };
  switch (spec.type) {
    case 'none':
      return static_(() => ({}));
    case 'bearer':
      return static_(() => ({ authorization: `Bearer ${readSecret(spec.token, env)}` }));
    case 'api-key':
      return static_(() => ({ [spec.header.toLowerCase()]: readSecret(spec.key, env) }));
    case 'oauth2-client-credentials':
      throw new MeshError('CONFIG_INVALID', 'remote agent credentials: oauth2-client-credentials is not supported by this build');
  }
}
