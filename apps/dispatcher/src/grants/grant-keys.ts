import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { calculateJwkThumbprint, createLocalJWKSet, exportJWK, type JWK, type JWTVerifyGetKey } from 'jose';
import { MeshError } from '@mesh/contract';
import type { Logger } from '@mesh/telemetry';

/** The JWS algorithm of every grant and tool token the dispatcher signs (Ed25519). */
export const GRANT_ALG = 'EdDSA';

/** One Ed25519 key: its private half and its public JWK, `kid` the RFC 7638 thumbprint. */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicJwk: JWK;
}

/** Where the keys come from (the DISPATCHER_SIGNING_KEY* settings). */
export interface GrantKeySettings {
  DISPATCHER_SIGNING_KEY_FILE?: string;
  DISPATCHER_SIGNING_KEY?: string;
  DISPATCHER_SIGNING_KEY_PREVIOUS_FILE?: string;
}

/**
 * The dispatcher's signing key and the key it signed with before a rotation: both are published
 * (JWKS) and accepted, only the current one signs. Signing is synchronous (node:crypto), so a
 * grant is made where the run command is built, inside the accept's transaction, without a wait.
 */
export class GrantKeys {
  private readonly keySet: JWTVerifyGetKey;

  private constructor(
    readonly current: SigningKey,
    readonly previous: SigningKey | undefined,
    /** The key was made at start: tokens verify only while this process runs. */
    readonly ephemeral: boolean,
  ) {
    this.keySet = createLocalJWKSet(this.jwks());
  }

  /** Reads the configured keys; without one, makes a key for this process and says so. */
  static async load(settings: GrantKeySettings, logger?: Logger): Promise<GrantKeys> {
    const previous = settings.DISPATCHER_SIGNING_KEY_PREVIOUS_FILE
      ? await signingKey(
          readPem(settings.DISPATCHER_SIGNING_KEY_PREVIOUS_FILE, 'DISPATCHER_SIGNING_KEY_PREVIOUS_FILE'),
          'DISPATCHER_SIGNING_KEY_PREVIOUS_FILE',
        )
      : undefined;
    if (settings.DISPATCHER_SIGNING_KEY_FILE)
      return new GrantKeys(
        await signingKey(readPem(settings.DISPATCHER_SIGNING_KEY_FILE, 'DISPATCHER_SIGNING_KEY_FILE'), 'DISPATCHER_SIGNING_KEY_FILE'),
        previous,
        false,
      );
    if (settings.DISPATCHER_SIGNING_KEY)
      return new GrantKeys(await signingKey(settings.DISPATCHER_SIGNING_KEY, 'DISPATCHER_SIGNING_KEY'), previous, false);
    logger?.warn(
      'DISPATCHER_SIGNING_KEY_FILE is not set: grants and tool tokens are signed with a key made at start; they verify only while this replica runs (replicas must share a configured key)',
    );
    return GrantKeys.generate(previous);
  }

  /** A key made now (tests, and the fallback of {@link load}). */
  static async generate(previous?: SigningKey): Promise<GrantKeys> {
    const { privateKey } = generateKeyPairSync('ed25519');
    return new GrantKeys(await fromPrivateKey(privateKey), previous, true);
  }

  /** The public keys (RFC 7517 JWK Set): what `GET /.well-known/jwks.json` serves. */
  jwks(): { keys: JWK[] } {
    return { keys: [this.current.publicJwk, ...(this.previous ? [this.previous.publicJwk] : [])] };
  }

  /** The key set verification accepts (jose `jwtVerify`): the current key and the previous one. */
  verificationKeys(): JWTVerifyGetKey {
    return this.keySet;
  }

  /** A compact JWS of `payload` with header `typ`, signed with the current key. */
  signJwt(typ: string, payload: Record<string, unknown>): string {
    const header = { alg: GRANT_ALG, kid: this.current.kid, typ };
    const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(payload))}`;
    return `${input}.${sign(null, Buffer.from(input), this.current.privateKey).toString('base64url')}`;
  }
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');

function readPem(path: string, name: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (cause) {
    throw new MeshError('CONFIG_INVALID', `${name}: cannot read ${path}`, { cause });
  }
}

async function signingKey(pem: string, name: string): Promise<SigningKey> {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (cause) {
    throw new MeshError('CONFIG_INVALID', `${name}: not a PKCS#8 PEM private key`, { cause });
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new MeshError('CONFIG_INVALID', `${name}: must be an Ed25519 key (got ${key.asymmetricKeyType})`);
  return fromPrivateKey(key);
}

async function fromPrivateKey(privateKey: KeyObject): Promise<SigningKey> {
  const jwk = await exportJWK(createPublicKey(privateKey));
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  return { kid, privateKey, publicJwk: { ...jwk, kid, alg: GRANT_ALG, use: 'sig' } };
}
