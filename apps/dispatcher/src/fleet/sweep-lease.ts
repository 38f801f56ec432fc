import pg from 'pg';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { silentLogger, type Logger } from '@mesh/telemetry';

/** Whether this replica runs the fleet's catch-up sweeps now. */
export interface SweepTurn {
  readonly held: boolean;
}

export interface SweepLeaseOptions {
  /** The dispatcher's database (`DATABASE_URL`): the lease is per database, so per fleet. */
  url: string;
  /** Pause between attempts while another replica holds the lease or the connection is down. */
  retryMs: number;
  /** The service's logger (lines carry `src: sweep-lease`). */
  logger?: Logger;
}

/** The advisory lock's key: any constant no other user of the database takes. */
const SWEEP_LOCK_KEY = 0x6d657368_7377; // "mesh" "sw"

/**
 * One replica of a fleet at a time runs the sweeps that catch up on work nobody woke (push
 * retries, delegation waits, deadlines and retention, outbox rows left by a replica that died):
 * the replica whose connection holds a Postgres session advisory lock. Every replica still acts at
 * once on what it committed itself (its relay, push loop and watchers are kicked after the commit);
 * the lease only keeps N replicas from polling the same tables N times over.
 *
 * Two holders are harmless (every sweep claims its rows and shares work between replicas), none is
 * a delay: when the holder's connection ends, Postgres releases the lock and another replica takes
 * it within `retryMs`.
 */
export class SweepLease implements SweepTurn, OnApplicationBootstrap, OnApplicationShutdown {
  private client?: pg.Client;
  private holding = false;
  private stopped = false;
  private retry?: NodeJS.Timeout;
  private readonly log: Logger;

  constructor(private readonly opts: SweepLeaseOptions) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'sweep-lease' });
  }

  get held(): boolean {
    return this.holding;
  }

  /** Resolves after the first attempt, held or not (it retries meanwhile): never rejects. */
  async start(): Promise<void> {
    await this.attempt();
  }

  onApplicationBootstrap(): Promise<void> {
    return this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  /** Ends the connection, which releases the lock for the next replica. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.holding = false;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    try {
      const client = this.client ?? (await this.connect());
      const [{ held }] = (await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1) AS held', [SWEEP_LOCK_KEY])).rows;
      if (this.stopped || client !== this.client) return;
      if (held) {
        this.holding = true;
        this.log.info('this replica runs the sweeps');
        return;
      }
    } catch (err) {
      this.log.warn({ err: String(err) }, 'cannot take the sweep lease; will retry');
      this.drop();
    }
    this.later();
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.opts.url, connectionTimeoutMillis: 5000, keepAlive: true });
    const lost = (err?: unknown) => {
      if (this.client !== client) return;
      this.drop();
      if (this.stopped) return;
      this.log.warn({ err: err === undefined ? 'connection ended' : String(err) }, 'sweep lease connection lost; will take it again');
      this.later();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    this.client = client;
    await client.connect();
    return client;
  }

  /** The connection is gone or unusable: whatever it held, Postgres released with it. */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    this.holding = false;
    void client?.end().catch(() => undefined);
  }

  private later(): void {
    if (this.stopped) return;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.attempt(), this.opts.retryMs);
    this.retry.unref();
  }
}
