import type { AgentRecord } from '@mesh/contract';

/** Why a new task is refused for now, and when to try again. */
export interface Refusal {
  httpStatus: 429 | 503;
  /** Machine-readable reason (ErrorInfo.reason). */
  reason: 'RATE_LIMITED' | 'TENANT_BYTES_EXCEEDED' | 'NO_HEALTHY_WORKER' | 'AGENT_BACKLOG_FULL' | 'TOO_MANY_STREAMS';
  message: string;
  retryAfterSeconds: number;
}

/**
 * Token bucket per tenant (per replica: the limit of the fleet is replicas × rate). A token is a
 * request, or a byte of request body (the byte budget).
 */
export class TenantRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Takes `cost` tokens (at most the bucket's size: a cost above it waits for a full bucket, so it
   * is never refused for good); returns the seconds to wait when too few are left (none are taken).
   */
  take(tenant: string, cost = 1): number | undefined {
    const r = this.takeUpTo(tenant, cost);
    return 'waitSeconds' in r ? r.waitSeconds : undefined;
  }

  /** {@link take}, saying how many tokens were taken. */
  takeUpTo(tenant: string, cost: number): { taken: number } | { waitSeconds: number } {
    const b = this.refilled(tenant);
    const need = Math.min(cost, this.burst);
    if (b.tokens >= need) {
      b.tokens -= need;
      return { taken: need };
    }
    return { waitSeconds: Math.max(1, Math.ceil((need - b.tokens) / this.perSecond)) };
  }

  /**
   * Settles `taken` tokens against what was `used`: the unused part is given back (never above the
   * bucket's size), use beyond what was taken is owed: the bucket goes below zero and the tenant
   * waits until the refill has paid it.
   */
  settle(tenant: string, taken: number, used: number): void {
    const b = this.refilled(tenant);
    b.tokens = Math.min(this.burst, b.tokens + taken - used);
  }

  private refilled(tenant: string): { tokens: number; at: number } {
    const t = this.now();
    const b = this.buckets.get(tenant) ?? { tokens: this.burst, at: t };
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.perSecond);
    b.at = t;
    this.buckets.set(tenant, b);
    return b;
  }
}

/**
 * A request body charged to its tenant's byte budget: `settle` is called with the bytes actually
 * read once the body was read (or not: 0).
 */
export interface BodyCharge {
  settle(bytesRead: number): void;
}

/** The agent's workers' consumer group as last measured; undefined: unknown (never a refusal). */
export interface WorkerGroupState {
  /** Unconsumed commands. */
  backlog?: number;
  /** Live members: consumers reading the agent's commands. */
  members?: number;
}

/** What admission needs to know about an agent's workers. */
export interface WorkerSignals {
  /** A worker heartbeat within its TTL exists. */
  healthy(agentId: string): boolean;
  /** The agent's workers' consumer group (cached). */
  group(agentId: string): Promise<WorkerGroupState>;
}

export interface AdmissionOptions {
  ratePerSecond: number;
  burst: number;
  /** Request-body bytes per second per tenant (0: no byte budget). */
  bytesPerSecond: number;
  /** Bucket size of the byte budget. */
  bytesBurst: number;
  /** Largest body a request may have: what a body of unannounced length (chunked) is charged before it is read. */
  maxBodyBytes: number;
  requireHealthyWorker: boolean;
  maxBacklog: number;
  retryAfterSeconds: number;
}

/**
 * Admission control of new work (SendMessage, SendStreamingMessage): per-tenant rate, then the
 * agent's health (a live heartbeat and a member in its workers' group) and backlog. Reads
 * (GetTask, ListTasks…) never pass through {@link check}; every request body, whatever the method,
 * is charged to the tenant's byte budget ({@link chargeBody}).
 */
export class Admission {
  private readonly limiter: TenantRateLimiter;
  private readonly bytes: TenantRateLimiter | undefined;

  constructor(
    private readonly signals: WorkerSignals,
    private readonly opts: AdmissionOptions,
  ) {
    this.limiter = new TenantRateLimiter(opts.ratePerSecond, opts.burst);
    this.bytes = opts.bytesPerSecond > 0 ? new TenantRateLimiter(opts.bytesPerSecond, opts.bytesBurst) : undefined;
  }

  /**
   * Charges a request body to the tenant's byte budget before it is read: the event loop's time
   * goes with the bytes it parses, stores and produces, which the request rate does not bound.
   * `declaredBytes` is the Content-Length; a body without one (chunked) is charged the most it may
   * be. Either is settled at what was read when that is more (a compressed body's decoded bytes).
   * A body larger than the bucket takes the whole bucket up front and owes the rest once settled.
   */
  chargeBody(tenant: string, declaredBytes: number | undefined): Refusal | BodyCharge {
    const bucket = this.bytes;
    if (!bucket) return { settle: () => undefined };
    const took = bucket.takeUpTo(tenant, declaredBytes ?? this.opts.maxBodyBytes);
    if ('waitSeconds' in took)
      return {
        httpStatus: 429,
        reason: 'TENANT_BYTES_EXCEEDED',
        message: `tenant "${tenant}" exceeded its request body budget of ${this.opts.bytesPerSecond} bytes/s`,
        retryAfterSeconds: took.waitSeconds,
      };
    // A body costs its bytes, whatever was taken up front (at most the bucket's size): its declared
    // length, or what was read when more (a compressed body is charged decoded).
    return { settle: (bytesRead) => bucket.settle(tenant, took.taken, Math.max(declaredBytes ?? 0, bytesRead)) };
  }

  async check(tenant: string, agent: AgentRecord): Promise<Refusal | undefined> {
    const wait = this.limiter.take(tenant);
    if (wait !== undefined)
      return {
        httpStatus: 429,
        reason: 'RATE_LIMITED',
        message: `tenant "${tenant}" exceeded ${this.opts.ratePerSecond} requests/s`,
        retryAfterSeconds: wait,
      };
    if (this.opts.requireHealthyWorker && !this.signals.healthy(agent.id)) return this.noHealthyWorker(agent, '');
    const { backlog, members } = await this.signals.group(agent.id);
    // A process that heartbeats but consumes nothing would leave accepted tasks waiting until their deadline.
    if (this.opts.requireHealthyWorker && members === 0)
      return this.noHealthyWorker(agent, ': its workers send heartbeats, but none is reading its commands');
    if (backlog !== undefined && backlog > this.opts.maxBacklog)
      return {
        httpStatus: 503,
        reason: 'AGENT_BACKLOG_FULL',
        message: `agent "${agent.id}" has ${backlog} commands waiting (limit ${this.opts.maxBacklog})`,
        retryAfterSeconds: this.opts.retryAfterSeconds,
      };
    return undefined;
  }

  private noHealthyWorker(agent: AgentRecord, why: string): Refusal {
    return {
      httpStatus: 503,
      reason: 'NO_HEALTHY_WORKER',
      message: `agent "${agent.id}" has no healthy worker${why}`,
      retryAfterSeconds: this.opts.retryAfterSeconds,
    };
  }
}
