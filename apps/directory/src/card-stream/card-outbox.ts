import type { DataSource } from 'typeorm';
import type { AgentRecord, AgentVisibility } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { CardStream } from './card-stream.port.js';

interface PendingRow {
  id: string;
  tenant: string;
  visibility: AgentVisibility;
  version: number;
  card: AgentRecord['card'];
  channel_key_template: string;
  partitions: number;
  retired_at: Date | null;
  updated_at: Date;
  revision: number;
}

/** The record published for an agent row. */
export function toAgentRecord(row: Omit<PendingRow, 'revision'>): AgentRecord {
  return {
    id: row.id,
    tenant: row.tenant,
    visibility: row.visibility,
    version: row.version,
    card: row.card,
    channel: { keyTemplate: row.channel_key_template, partitions: row.partitions },
    retired: row.retired_at !== null,
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/**
 * Transactional outbox over the agent table itself: each change bumps `revision` in the same
 * transaction as the change, and this publisher writes every row whose `published_revision` lags
 * to the compacted cards topic, then records what it published. Run after each commit, on start
 * and on a timer, so a commit is never left without its record (at-least-once; the topic is
 * compacted by agent id, so a duplicate is harmless). Rows are locked while published, so two
 * replicas never publish an older state after a newer one.
 */
export class CardOutbox {
  private running?: Promise<void>;
  private again = false;
  private timer?: NodeJS.Timeout;
  /** Last publishing error, for logs and tests. */
  lastError?: unknown;
  private readonly log: Logger;

  constructor(
    private readonly ds: DataSource,
    private readonly stream: CardStream,
    private readonly opts: { sweepMs: number; batch?: number; logger?: Logger },
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'card-outbox' });
  }

  /** Publishes everything pending now, and again every `sweepMs`. */
  start(): void {
    void this.flush();
    this.timer = setInterval(() => void this.flush(), this.opts.sweepMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Publishes pending records; coalesces concurrent calls. Never throws (failures retry later). */
  flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          while ((await this.publishBatch()) > 0);
        } while (this.again);
        this.lastError = undefined;
      } catch (err) {
        this.lastError = err;
        this.log.warn({ err: String(err) }, 'publish failed; will retry');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** How many agent changes are not yet on the topic. */
  async pending(): Promise<number> {
    const [row] = await this.ds.query(`SELECT count(*)::int AS n FROM directory.agent WHERE published_revision < revision`);
    return (row as { n: number }).n;
  }

  private async publishBatch(): Promise<number> {
    return this.ds.transaction(async (m) => {
      const rows: PendingRow[] = await m.query(
        `SELECT id, tenant, visibility, version, card, channel_key_template, partitions, retired_at, updated_at, revision
           FROM directory.agent WHERE published_revision < revision
           ORDER BY updated_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [this.opts.batch ?? 100],
      );
      for (const row of rows) {
        await this.stream.publish(toAgentRecord(row));
        await m.query(`UPDATE directory.agent SET published_revision = $2 WHERE id = $1`, [row.id, row.revision]);
      }
      return rows.length;
    });
  }
}
