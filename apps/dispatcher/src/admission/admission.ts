import type { AgentRecord } from '@mesh/contract';

/** Why a new task is refused for now, and when to try again. */
export interface Refusal {
  httpStatus: 429 | 503;
  /** Machine-readable reason (ErrorInfo.reason): RATE_LIMITED, NO_HEALTHY_WORKER, AGENT_BACKLOG_FULL, TOO_MANY_STREAMS. */
  reason: 'RATE_LIMITED' | 'NO_HEALTHY_WORKER' | 'AGENT_BACKLOG_FULL' | 'TOO_MANY_STREAMS';
  message: string;
  retryAfterSeconds: number;
}

/** Token bucket per tenant (per replica: the limit of the fleet is replicas × rate). */
export class TenantRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one token; returns the seconds to wait when none is left. */
  take(tenant: string): number | undefined {
    const t = this.now();
    const b = this.buckets.get(tenant) ?? { tokens: this.burst, at: t };
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.perSecond);
    b.at = t;
    this.buckets.set(tenant, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
  }
}

/** What admission needs to know about an agent's workers. */
export interface WorkerSignals {
  /** A worker heartbeat within its TTL exists. */
  healthy(agentId: string): boolean;
  /** Unconsumed commands of the agent's worker group (cached; undefined when unknown). */
  backlog(agentId: string): Promise<number | undefined>;
}

export interface AdmissionOptions {
  ratePerSecond: number;
  burst: number;
  requireHealthyWorker: boolean;
  maxBacklog: number;
  retryAfterSeconds: number;
}

/**
 * Admission control of new work (SendMessage, SendStreamingMessage): per-tenant rate, then the
 * agent's health and backlog. Reads (GetTask, ListTasks…) never pass through here.
 */
export class Admission {
  private readonly limiter: TenantRateLimiter;

  constructor(
    private readonly signals: WorkerSignals,
    private readonly opts: AdmissionOptions,
  ) {
    this.limiter = new TenantRateLimiter(opts.ratePerSecond, opts.burst);
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
    if (this.opts.requireHealthyWorker && !this.signals.healthy(agent.id))
      return {
        httpStatus: 503,
        reason: 'NO_HEALTHY_WORKER',
        message: `agent "${agent.id}" has no healthy worker`,
        retryAfterSeconds: this.opts.retryAfterSeconds,
      };
    const backlog = await this.signals.backlog(agent.id);
    if (backlog !== undefined && backlog > this.opts.maxBacklog)
      return {
        httpStatus: 503,
        reason: 'AGENT_BACKLOG_FULL',
        message: `agent "${agent.id}" has ${backlog} commands waiting (limit ${this.opts.maxBacklog})`,
        retryAfterSeconds: this.opts.retryAfterSeconds,
      };
    return undefined;
  }
}
