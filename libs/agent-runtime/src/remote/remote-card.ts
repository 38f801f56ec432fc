import { canonicalizeAgentCard, verifyAgentCardSignature, type AgentCard } from '@a2a-js/sdk';
import type { JWK } from 'jose';
import { z } from 'zod';
import { MeshError } from '@mesh/contract';
import { PinnedHttpClient, type EgressPolicy } from '@mesh/egress';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { RemoteCredentials } from './remote-credentials.js';
import { abortable, errorText } from './abortable.js';

/** Largest card (and JWKS) read; a card is a few KiB, a larger answer is not a card. */
export const MAX_CARD_BYTES = 512 * 1024;

/**
 * Keys a signed remote card must verify against. As in the directory, keys are configured and
 * looked up by the JWS `kid`: a `jwk` or `jku` in the card's own header is never trusted, since
 * whoever can change the card can change its header too.
 */
export interface CardTrust {
  /** Trusted public keys, inline. */
  jwks?: { keys: JWK[] };
  /** Or a JWKS URL (fetched through the egress policy at each verification, so rotations apply). */
  jwksUrl?: string;
  /** Refuse unsigned cards. Default false: an unsigned card is accepted as it is. */
  requireSigned?: boolean;
}

export interface FetchRemoteCardOptions {
  egress: EgressPolicy;
  /** Sent with the card request (and refreshed once on a 401). */
  credentials?: RemoteCredentials;
  signal?: AbortSignal;
  trust?: CardTrust;
}

const cardSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  version: z.string().optional(),
  supportedInterfaces: z.array(z.looseObject({ url: z.string().min(1), protocolBinding: z.string().min(1) })).min(1),
  skills: z.array(z.looseObject({ id: z.string().min(1), name: z.string() })).optional(),
  signatures: z.array(z.looseObject({ protected: z.string().min(1), signature: z.string().min(1) })).optional(),
});

/**
 * An A2A 1.0 Agent Card in its JSON form, as the remote served it (`AgentCard.fromJSON` from
 * `@a2a-js/sdk` gives the SDK's type).
 */
export type RemoteAgentCard = z.infer<typeof cardSchema>;

/**
 * Fetches a remote agent's card through the egress policy and checks it: JSON, shaped like an
 * A2A 1.0 card, and, when signed, every signature valid under the trusted keys.
 * Errors: EGRESS_REFUSED, UNAUTHENTICATED (401/403), NOT_FOUND, UNAVAILABLE (5xx, network:
 * retryable), CONTRACT_VIOLATION (not JSON, not a card), SIGNATURE_INVALID, SIGNATURE_REQUIRED.
 */
export async function fetchRemoteCard(cardUrl: string, opts: FetchRemoteCardOptions): Promise<RemoteAgentCard> {
  const http = new PinnedHttpClient(opts.egress);
  let res = await getCard(http, cardUrl, opts);
  if (res.status === 401 && opts.credentials) {
    opts.credentials.rejected();
    res = await getCard(http, cardUrl, opts);
  }
  const where = `agent card at ${cardUrl}`;
  if (res.status === 401 || res.status === 403)
    throw new MeshError('UNAUTHENTICATED', `${where}: the remote refused the credentials (HTTP ${res.status})`);
  if (res.status === 404) throw new MeshError('NOT_FOUND', `${where}: not found (HTTP 404)`);
  if (res.status >= 500) throw new MeshError('UNAVAILABLE', `${where}: HTTP ${res.status}`, { retryable: true });
  if (res.status !== 200) throw new MeshError('CONTRACT_VIOLATION', `${where}: unexpected HTTP ${res.status}`);
  let json: unknown;
  try {
    json = JSON.parse(res.body);
  } catch {
    throw new MeshError('CONTRACT_VIOLATION', `${where} is not JSON (or larger than ${MAX_CARD_BYTES} bytes)`);
  }
  const parsed = cardSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(card)'}: ${i.message}`).join('; ');
    throw new MeshError('CONTRACT_VIOLATION', `${where} is not an A2A 1.0 agent card: ${problems}`);
  }
  await verifyCard(parsed.data, opts, where);
  return parsed.data;
}

async function getCard(http: PinnedHttpClient, cardUrl: string, opts: FetchRemoteCardOptions) {
  opts.signal?.throwIfAborted();
  const headers: Record<string, string> = {
    accept: 'application/json',
    'a2a-version': '1.0',
    ...(await opts.credentials?.headers(opts.signal)),
  };
  try {
    return await abortable(http.request(cardUrl, { method: 'GET', headers, maxResponseBytes: MAX_CARD_BYTES }), opts.signal);
  } catch (err) {
    if (err instanceof MeshError || opts.signal?.aborted) throw err;
    throw new MeshError('UNAVAILABLE', `agent card at ${cardUrl} unreachable: ${errorText(err)}`, { retryable: true });
  }
}

/** Every signature must verify, so a stale or foreign signature cannot ride along with a good one. */
async function verifyCard(card: RemoteAgentCard, opts: FetchRemoteCardOptions, where: string): Promise<void> {
  const signatures = card.signatures ?? [];
  if (signatures.length === 0) {
    if (opts.trust?.requireSigned) throw new MeshError('SIGNATURE_REQUIRED', `${where} is not signed, and a signed card is required`);
    return;
  }
  const keys = await trustedKeys(opts, where);
  for (const [i, sig] of signatures.entries()) {
    let missingKid: string | undefined;
    const verify = verifyAgentCardSignature(async (kid) => {
      const jwk = keys.find((k) => k.kid === kid);
      if (!jwk) {
        missingKid = kid;
        throw new Error(`no trusted key "${kid}"`);
      }
      return jwk;
    });
    try {
      // The SDK canonicalises the JSON form (RFC 8785 over the card without `signatures`).
      await verify({ ...card, signatures: [sig] } as unknown as AgentCard);
    } catch {
      const reason =
        missingKid !== undefined
          ? `no trusted key with kid "${missingKid}"`
          : 'it does not match the card (the card was changed after signing, or the header is malformed)';
      throw new MeshError('SIGNATURE_INVALID', `${where}: signature ${i} is invalid: ${reason}`);
    }
  }
}

async function trustedKeys(opts: FetchRemoteCardOptions, where: string): Promise<JWK[]> {
  const trust = opts.trust ?? {};
  const keys = [...(trust.jwks?.keys ?? [])];
  if (trust.jwksUrl) {
    const res = await getJson(new PinnedHttpClient(opts.egress), trust.jwksUrl, opts.signal);
    const jwks = z.object({ keys: z.array(z.looseObject({ kid: z.string().optional() })) }).safeParse(res);
    if (!jwks.success) throw new MeshError('CONTRACT_VIOLATION', `JWKS at ${trust.jwksUrl} is not a JSON Web Key Set`);
    keys.push(...(jwks.data.keys as JWK[]));
  }
  // Fail closed: a signature nobody can check is not a verified signature.
  if (keys.length === 0)
    throw new MeshError('SIGNATURE_INVALID', `${where} is signed but no trusted keys are configured (trust.jwks or trust.jwksUrl)`);
  return keys;
}

async function getJson(http: PinnedHttpClient, url: string, signal?: AbortSignal): Promise<unknown> {
  let res;
  try {
    res = await abortable(
      http.request(url, { method: 'GET', headers: { accept: 'application/json' }, maxResponseBytes: MAX_CARD_BYTES }),
      signal,
    );
  } catch (err) {
    if (err instanceof MeshError || signal?.aborted) throw err;
    throw new MeshError('UNAVAILABLE', `JWKS at ${url} unreachable: ${errorText(err)}`, { retryable: true });
  }
  if (res.status !== 200) throw new MeshError('UNAVAILABLE', `JWKS at ${url}: HTTP ${res.status}`, { retryable: res.status >= 500 });
  try {
    return JSON.parse(res.body);
  } catch {
    throw new MeshError('CONTRACT_VIOLATION', `JWKS at ${url} is not JSON`);
  }
}

/** What the refresher compares: the card's canonical content, without its (possibly re-made) signatures. */
export function cardContentKey(card: RemoteAgentCard): string {
  return canonicalizeAgentCard(card as unknown as AgentCard);
}

/** Timers the refresher schedules with (injected by tests). */
export interface RefreshTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: RefreshTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface RemoteCardRefresherOptions extends Omit<FetchRemoteCardOptions, 'signal'> {
  cardUrl: string;
  /** Time between the end of one fetch and the start of the next. */
  intervalMs: number;
  /** Called with the new card when its content differs from the last good one (and for the first). */
  onChange: (card: RemoteAgentCard) => void | Promise<void>;
  /** The card already known (e.g. fetched at registration): onChange fires only when it changes. */
  initial?: RemoteAgentCard;
  logger?: Logger;
  timers?: RefreshTimers;
  /** Replaces fetchRemoteCard (unit tests). */
  fetchCard?: (signal: AbortSignal) => Promise<RemoteAgentCard>;
}

/**
 * Keeps a remote agent's card fresh: re-fetches it every `intervalMs`, hands a changed card to
 * `onChange`, and on failure keeps the last good card and logs. One fetch at a time.
 */
export class RemoteCardRefresher {
  private last?: RemoteAgentCard;
  private lastKey?: string;
  private timer: unknown;
  private running?: Promise<void>;
  private readonly abort = new AbortController();
  private stopped = false;
  private readonly timers: RefreshTimers;
  private readonly logger: Logger;
  private readonly fetchCard: (signal: AbortSignal) => Promise<RemoteAgentCard>;

  constructor(private readonly opts: RemoteCardRefresherOptions) {
    if (!Number.isFinite(opts.intervalMs) || opts.intervalMs <= 0)
      throw new MeshError('CONFIG_INVALID', `card refresh interval must be a positive number of ms, got ${opts.intervalMs}`);
    this.timers = opts.timers ?? realTimers;
    this.logger = (opts.logger ?? silentLogger).child({ src: 'remote-card', cardUrl: opts.cardUrl });
    this.fetchCard = opts.fetchCard ?? ((signal) => fetchRemoteCard(opts.cardUrl, { ...opts, signal }));
    if (opts.initial) {
      this.last = opts.initial;
      this.lastKey = cardContentKey(opts.initial);
    }
  }

  /** The last good card, if any. */
  get card(): RemoteAgentCard | undefined {
    return this.last;
  }

  /** Starts refreshing: at once when no card is known yet, else after one interval. */
  start(): void {
    if (this.stopped || this.timer !== undefined || this.running) return;
    if (this.last) this.schedule();
    else void this.refresh();
  }

  /** One refresh now (the next is scheduled after it): the card after it, or the last good one. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.fetchOnce().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    return this.running;
  }

  /** Stops refreshing and abandons a fetch in flight; onChange is not called after this. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort(new MeshError('CANCELLED', 'card refresher stopped'));
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.opts.intervalMs);
  }

  private async fetchOnce(): Promise<void> {
    let card: RemoteAgentCard;
    try {
      card = await this.fetchCard(this.abort.signal);
    } catch (err) {
      if (this.stopped) return;
      this.logger.warn(
        { err: errorText(err), code: err instanceof MeshError ? err.code : undefined, hasCard: this.last !== undefined },
        'agent card refresh failed; the last good card stays in use',
      );
      return;
    }
    if (this.stopped) return;
    const key = cardContentKey(card);
    this.last = card;
    if (key === this.lastKey) return;
    try {
      await this.opts.onChange(card);
      // Only once handled: a failed onChange is offered the card again at the next refresh.
      this.lastKey = key;
    } catch (err) {
      this.logger.error({ err: errorText(err) }, 'agent card change handler failed; retried at the next refresh');
    }
  }
}
