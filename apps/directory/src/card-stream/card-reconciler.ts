import type { DataSource } from 'typeorm';
import { silentLogger, type Logger } from '@mesh/telemetry';
import type { CardOutbox } from './card-outbox.js';
import type { CardStream, CardsTopicState } from './card-stream.port.js';

/** Options of the card reconciler. */
export interface CardReconcilerOptions {
  /** How often the cards topic is compared with the database (0: only at start). */
  intervalMs: number;
  /** The service's logger (lines carry `src: card-reconciler`). */
  logger?: Logger;
  /**
   * Creates the directory's topics that are not the card stream's when missing (the heartbeats
   * topic, its liveness module's): a cluster that lost the cards topic lost them too.
   */
  ensureOtherTopics?(): Promise<void>;
}

/** Why the topic is taken to be behind the database, or undefined when nothing says so. */
export function divergence(last: CardsTopicState | undefined, now: CardsTopicState, agents: number): string | undefined {
  if (now.endOffsets === null) return 'the cards topic does not exist';
  if (last && last.clusterId !== now.clusterId) return `the Kafka cluster changed (${last.clusterId} → ${now.clusterId})`;
  // Offsets only grow and compaction never lowers them: a topic holding every agent has at least
  // one record per agent, and no partition's end ever moves back.
  const total = now.endOffsets.reduce((n, o) => n + (o ?? 0), 0);
  if (total < agents) return `the cards topic holds ${total} records for ${agents} agents`;
  if (last?.endOffsets) {
    if (now.endOffsets.length !== last.endOffsets.length) return 'the cards topic changed its partitions';
    const back = now.endOffsets.findIndex((o, p) => o < (last.endOffsets![p] ?? 0));
    if (back >= 0) return `partition ${back} of the cards topic moved back (recreated or truncated)`;
  }
  return undefined;
}

/**
 * Keeps Kafka in line with the directory's database, which owns the agents: the cards topic is a
 * copy (what every dispatcher's catalog is built from) and the command topics are where the
 * agents' work goes. At start, and whenever a periodic check finds the topic behind the database
 * (cluster replaced, topic missing, recreated or truncated), it recreates the directory's topics and
 * every live agent's command topic and republishes every agent, live and retired, through the
 * outbox (records are keyed by id on a compacted topic: a republished one is harmless). Between
 * full republishes, a missing command topic is recreated on its own.
 */
export class CardReconciler {
  private last?: CardsTopicState;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** Completed full republishes (for tests and logs). */
  republished = 0;
  private readonly log: Logger;

  constructor(
    private readonly ds: DataSource,
    private readonly stream: CardStream,
    private readonly outbox: CardOutbox,
    private readonly opts: CardReconcilerOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'card-reconciler' });
  }

  /** Republishes everything once (throws if Kafka refuses), then checks every `intervalMs`. */
  async start(): Promise<void> {
    await this.reconcile('start');
    if (this.opts.intervalMs > 0) {
      this.timer = setInterval(() => void this.checkNow(), this.opts.intervalMs);
      this.timer.unref();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One check (and a republish when the topic is behind); never throws, overlapping calls coalesce. */
  checkNow(): Promise<void> {
    this.running ??= this.check()
      .catch((err: unknown) => this.log.warn({ err: String(err) }, 'cards topic check failed; will retry'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async check(): Promise<void> {
    const now = await this.stream.cardsTopicState();
    const why = divergence(this.last, now, await this.agentCount());
    if (why) return this.reconcile(why);
    this.last = now;
    const missing = await this.stream.missingCommandTopics(await this.liveIds());
    if (missing.length > 0) await this.ensureCommandTopics(missing);
  }

  /** Recreates what is missing and republishes every agent. */
  private async reconcile(why: string): Promise<void> {
    this.log[why === 'start' ? 'info' : 'warn']({ why }, 'republishing every agent to the cards topic');
    await this.stream.ensureCardsTopic();
    await this.opts.ensureOtherTopics?.();
    await this.ensureCommandTopics(await this.stream.missingCommandTopics(await this.liveIds()));
    await this.ds.query(`UPDATE directory.agent SET published_revision = 0`);
    await this.outbox.flush();
    if (this.outbox.lastError) throw this.outbox.lastError;
    this.last = await this.stream.cardsTopicState();
    this.republished++;
  }

  private async ensureCommandTopics(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const rows: Array<{ id: string; partitions: number }> = await this.ds.query(
      `SELECT id, partitions FROM directory.agent WHERE id = ANY($1::text[]) AND retired_at IS NULL`,
      [ids],
    );
    this.log.warn({ agents: rows.map((r) => r.id) }, 'recreating missing command topics');
    for (const r of rows) await this.stream.ensureCommandTopic(r.id, r.partitions);
  }

  private async liveIds(): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.ds.query(`SELECT id FROM directory.agent WHERE retired_at IS NULL`);
    return rows.map((r) => r.id);
  }

  private async agentCount(): Promise<number> {
    const [row] = (await this.ds.query(`SELECT count(*)::int AS n FROM directory.agent`)) as Array<{ n: number }>;
    return row.n;
  }
}
