import { BusAdmin, type Kafka } from '@mesh/bus';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { WorkerSignals } from './admission.js';

export interface KafkaWorkerSignalsOptions {
  /** The agent's workers' consumer group. */
  groupOf: (agentId: string) => string;
  /** The agent's command topic. */
  topicOf: (agentId: string) => string;
  /** Whether a worker of the agent sent a heartbeat within its TTL. */
  healthy: (agentId: string) => boolean;
  /** How long a backlog measurement is reused. */
  ttlMs: number;
  /** Longest an accept waits for a stale measurement. */
  waitMs: number;
}

/**
 * Backlog of an agent = total lag of its workers' consumer group on its command topic (group
 * `ConsumerGroups.agentWorkers` of `@mesh/contract`), read at most once per `ttlMs` per agent
 * so admission costs no broker round trip on the hot path.
 */
export class KafkaWorkerSignals implements WorkerSignals, OnApplicationShutdown {
  private readonly admin: BusAdmin;
  private readonly backlogs: CachedBacklog;

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaWorkerSignalsOptions,
  ) {
    this.admin = new BusAdmin(kafka);
    this.backlogs = new CachedBacklog(
      (agentId) =>
        this.admin
          .consumerLag(opts.groupOf(agentId), [opts.topicOf(agentId)])
          .then((rows) => (rows.length ? rows.reduce((n, r) => n + r.lag, 0) : undefined)),
      opts.ttlMs,
      opts.waitMs,
    );
  }

  healthy(agentId: string): boolean {
    return this.opts.healthy(agentId);
  }

  backlog(agentId: string): Promise<number | undefined> {
    return this.backlogs.get(agentId);
  }

  async close(): Promise<void> {
    await this.admin.close();
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }
}

/**
 * Per-agent backlog measurements, reused for `ttlMs`. A stale value is re-measured, but an accept
 * waits at most `waitMs` for it, then goes on with the last value (undefined = unknown, which never
 * refuses): with the broker down a measurement takes as long as the client's retries (tens of
 * seconds), and an accept only needs Postgres. One measurement per agent is in flight at a time.
 */
export class CachedBacklog {
  private readonly entries = new Map<string, { at: number; lag?: number; measuring?: Promise<void> }>();

  constructor(
    private readonly measure: (agentId: string) => Promise<number | undefined>,
    private readonly ttlMs: number,
    private readonly waitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(agentId: string): Promise<number | undefined> {
    let entry = this.entries.get(agentId);
    if (!entry) this.entries.set(agentId, (entry = { at: -Infinity }));
    if (this.now() - entry.at < this.ttlMs) return entry.lag;
    const e = entry;
    e.measuring ??= this.measure(agentId).then(
      (lag) => void Object.assign(e, { lag, at: this.now(), measuring: undefined }),
      // Unknown backlog never blocks work: the broker being slow is not the agent being full.
      () => void Object.assign(e, { lag: undefined, at: this.now(), measuring: undefined }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([e.measuring, new Promise<void>((r) => (timer = setTimeout(r, this.waitMs)))]);
    clearTimeout(timer);
    return e.lag;
  }
}
