import type { ConsoleClients } from './console-clients.js';
import { messageOf } from './console-clients.js';

/** One sample of an agent's command topic: lag, and records per second in (produced) and done (consumed). */
export interface SeriesPoint {
  /** Unix ms. */
  t: number;
  lag: number;
  inPerSec: number;
  outPerSec: number;
}

/** What {@link ConsoleSampler} keeps: per agent, the points of the last `windowMs`. */
export interface Series {
  intervalMs: number;
  windowMs: number;
  agents: Record<string, SeriesPoint[]>;
}

/**
 * Samples each agent's command topic on an interval for the lag and throughput charts: the broker
 * keeps no history, so the console keeps the last minutes itself (in memory, from its start).
 */
export class ConsoleSampler {
  private readonly points = new Map<string, SeriesPoint[]>();
  private readonly last = new Map<string, { t: number; produced: number; consumed: number }>();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly c: ConsoleClients,
    private readonly opts: { intervalMs: number; windowMs: number },
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.sample()
        .catch((err: unknown) => this.c.logger.debug({ err: messageOf(err) }, 'console sample failed'))
        .finally(() => {
          this.running = undefined;
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  series(): Series {
    return { intervalMs: this.opts.intervalMs, windowMs: this.opts.windowMs, agents: Object.fromEntries(this.points) };
  }

  /** One round over the directory's agents; an agent without a command topic (yet) is skipped, never asked about. */
  async sample(): Promise<void> {
    const agents = await this.c.agents();
    const now = Date.now();
    for (const a of agents) {
      const topic = this.c.commandTopic(a.id);
      if (!(await this.c.admin.topicExists(topic))) continue;
      const reports = await this.c.admin.consumerLag(this.c.groups.agentWorkers(a.id), [topic]);
      const produced = reports.reduce((n, r) => n + Number(r.highWatermark), 0);
      const lagSum = reports.reduce((n, r) => n + r.lag, 0);
      const consumed = produced - lagSum;
      const prev = this.last.get(a.id);
      this.last.set(a.id, { t: now, produced, consumed });
      const dt = prev ? (now - prev.t) / 1000 : 0;
      const rate = (d: number) => (dt > 0 ? Math.max(0, d) / dt : 0);
      const list = this.points.get(a.id) ?? [];
      list.push({
        t: now,
        lag: lagSum,
        inPerSec: prev ? rate(produced - prev.produced) : 0,
        outPerSec: prev ? rate(consumed - prev.consumed) : 0,
      });
      while (list.length && list[0]!.t < now - this.opts.windowMs) list.shift();
      this.points.set(a.id, list);
    }
  }
}
