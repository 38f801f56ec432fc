import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { DEMO_API_KEYS } from '@mesh/auth';
import { loadDirectoryConfig, startDirectory, type DirectoryOverrides, type RunningDirectory } from '@mesh/app-directory';
import { after } from 'node:test';
import { createHash } from 'node:crypto';
import { dropDatabase, ensureDatabase } from '@mesh/database';
import { testRun, uniquePrefix } from '../support/infra.js';

/** API keys of the tests: the demo tenants plus one used only to exhaust the rate limit. */
export const KEYS = { acme: 'demo-acme', globex: 'demo-globex', initech: 'demo-initech' } as const;

/** A valid A2A 1.0 card; `over` replaces top-level fields. */
export function card(name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `${name} helps with invoices and refunds`,
    version: '1.0.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    supportedInterfaces: [{ url: 'https://agents.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    skills: [
      {
        id: 'refund',
        name: 'Refund an order',
        description: 'Issues a refund for a paid order after checking the payment ledger',
        tags: ['billing', 'refunds'],
        examples: ['refund order 42'],
      },
    ],
    ...over,
  };
}

/** An ES256 key pair as JWKs. */
export async function keyPair(kid: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return {
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES256' },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256' },
  };
}

/** A database URL unique to this call (same naming as infra.ts freshDatabase, which run-tests cleans up). */
export async function newDatabaseUrl(label: string): Promise<string> {
  const url = new URL(testRun().databaseUrl);
  url.pathname = `${url.pathname}_${createHash('sha1').update(`${label}:${process.hrtime.bigint()}`).digest('hex').slice(0, 8)}`;
  await ensureDatabase(url.toString());
  return url.toString();
}

/**
 * A directory on a fresh database and topic prefix. Call at module top level: it registers one
 * `after` that stops the directory and then drops its database (in that order).
 */
export async function startTestDirectory(label: string, env: Record<string, string> = {}, overrides: DirectoryOverrides = {}) {
  const prefix = uniquePrefix(label);
  const dbUrl = await newDatabaseUrl(label);
  const config = loadDirectoryConfig({
    KAFKA_BROKERS: testRun().brokers.join(','),
    DATABASE_URL: dbUrl,
    TOPIC_PREFIX: prefix,
    AUTH_API_KEYS: `${DEMO_API_KEYS},demo-initech=initech:carol`,
    DISPATCHER_PUBLIC_URL: 'http://dispatcher.test:8080',
    ...env,
  });
  const dir: RunningDirectory = await startDirectory({ ...config, DIRECTORY_PORT: 0 }, overrides);
  after(async () => {
    await dir.stop();
    await dropDatabase(dbUrl).catch(() => undefined);
  });
  return { dir, config, prefix, databaseUrl: dbUrl };
}

/** One HTTP call to the directory. */
export interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function client(baseUrl: string) {
  return async (key: string | undefined, method: string, path: string, body?: unknown, raw?: string): Promise<Reply> => {
    const headers: Record<string, string> = {};
    if (key) headers.authorization = `Bearer ${key}`;
    if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}
