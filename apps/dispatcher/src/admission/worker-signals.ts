import { BusAdmin, type Kafka } from '@mesh/bus';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { WorkerGroupState, WorkerSignals } from './admission.js';

export interface KafkaWorkerSignalsOptions {
  /** The agent's workers' consumer group. */
  groupOf: (agentId: string) => string;
  /** The agent's command topic. */
  topicOf: (agentId: string) => string;
  /** Whether a worker of the agent sent a heartbeat within its TTL. */
  healthy: (agentId: string) => boolean;
  /** Whether the group's live members are counted too (admission requires a healthy worker). */
  countMembers: boolean;
  /** How long a measurement is reused. */
  ttlMs: number;
  /** Longest an accept waits for a stale measurement. */
  waitMs: number;
}

/**
 * The agent's workers' consumer group (`ConsumerGroups.agentWorkers` of `@mesh/contract`) on its
 * command topic: its backlog (total lag) and its live members (describeGroups: a heartbeat says a
 * worker process runs, a member says something reads the commands), read together at most once
 * per `ttlMs` per agent so admission costs no broker round trip on the hot path.
 */
export class KafkaWorkerSignals implements WorkerSignals, OnApplicationShutdown {
  private readonly admin: BusAdmin;
  private readonly groups: CachedMeasurement<WorkerGroupState>;

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaWorkerSignalsOptions,
  ) {
    this.admin = new BusAdmin(kafka);
    this.groups = new CachedMeasurement((agentId) => this.measure(agentId), {}, opts.ttlMs, opts.waitMs);
  }

  /** Each half that fails is unknown (undefined), never a refusal: the broker being slow is not the agent being down. */
  private async measure(agentId: string): Promise<WorkerGroupState> {
    const group = this.opts.groupOf(agentId);
    const [backlog, members] = await Promise.allSettled([
      this.admin
        .consumerLag(group, [this.opts.topicOf(agentId)])
        .then((rows) => (rows.length ? rows.reduce((n, r) => n + r.lag, 0) : undefined)),
      this.opts.countMembers ? this.admin.describeGroup(group).then((g) => g.members.length) : undefined,
    ]);
    return {
      backlog: backlog.status === 'fulfilled' ? backlog.value : undefined,
      members: members.status === 'fulfilled' ? members.value : undefined,
    };
  }

  healthy(agentId: string): boolean {
    return this.opts.healthy(agentId);
  }

  group(agentId: string): Promise<WorkerGroupState> {
    return this.groups.get(agentId);
  }

  async close(): Promise<void> {
    await this.admin.close();
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }
}

/**
 * Per-agent measurements, reused for `ttlMs`. A stale value is re-measured, but an accept waits at
 * most `waitMs` for it, then goes on with the last value (`unknown` at first, which never refuses):
 * with the broker down a measurement takes as long as the client's retries (tens of seconds), and
 * an accept only needs Postgres. One measurement per agent is in flight at a time.
 */
export class CachedMeasurement<T> {
  private readonly entries = new Map<string, { at: number; value: T; measuring?: Promise<void> }>();

  constructor(
    private readonly measure: (agentId: string) => Promise<T>,
    /** The value while nothing is known, and after a measurement failed. */
    private readonly unknown: T,
    private readonly ttlMs: number,
    private readonly waitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async get(agentId: string): Promise<T> {
    let entry = this.entries.get(agentId);
    if (!entry) this.entries.set(agentId, (entry = { at: -Infinity, value: this.unknown }));
    if (this.now() - entry.at < this.ttlMs) return entry.value;
    const e = entry;
    e.measuring ??= this.measure(agentId).then(
      (value) => void Object.assign(e, { value, at: this.now(), measuring: undefined }),
      // Unknown never blocks work: the broker being slow is not the agent being full or down.
      () => void Object.assign(e, { value: this.unknown, at: this.now(), measuring: undefined }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([e.measuring, new Promise<void>((r) => (timer = setTimeout(r, this.waitMs)))]);
    clearTimeout(timer);
    return e.value;
  }
}
