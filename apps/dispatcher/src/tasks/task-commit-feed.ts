import pg from 'pg';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { newId } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';

/**
 * Where a replica's projection says which tasks it changed: a Postgres NOTIFY on `channel`, sent
 * from the projection's own statement (so only once it commits), payload `<sender> <id>,<id>,…`.
 * One per process: `sender` tells a replica its own notifications apart.
 */
export class TaskCommitSignal {
  readonly channel = 'mesh_task_changes';
  readonly sender = newId();
}

/** What the feed tells: tasks whose logs another replica changed. */
export interface StoredElsewhere {
  /** Another replica committed a change of the task: its watchers here read the log now. */
  storedElsewhere(taskId: string): void;
  /** Notifications may have been missed (the feed was not listening): every watched task reads now. */
  readAll(): void;
}

export interface TaskCommitFeedOptions {
  /** The dispatcher's database (`DATABASE_URL`). */
  url: string;
  /** Pause before listening again after the connection was lost. */
  retryMs?: number;
  /** The service's logger (lines carry `src: task-commit-feed`). */
  logger?: Logger;
}

/**
 * Listens on one connection of its own to the projection's notifications (see
 * {@link TaskCommitSignal}) and tells the replica's TaskChangeNotifier which tasks another replica
 * changed, so a stream or a blocking send reads its task's log as soon as the change is stored,
 * whichever replica projected it. Every replica hears every notification: a payload of task ids,
 * no event read or decoded; its own are skipped (they were handed over as committed). The ids are
 * hints, never authority: a watcher reads only within the tenant that asked. While the connection
 * is down, watchers fall back on their polls, and on listening again every watched task reads once.
 */
export class TaskCommitFeed implements OnApplicationBootstrap, OnApplicationShutdown {
  private client?: pg.Client;
  private stopped = false;
  private retry?: NodeJS.Timeout;
  private readonly log: Logger;

  constructor(
    private readonly signal: TaskCommitSignal,
    private readonly changes: StoredElsewhere,
    private readonly opts: TaskCommitFeedOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'task-commit-feed' });
  }

  /** Whether the feed listens now. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Resolves after the first attempt to listen, listening or not (it retries meanwhile): never rejects. */
  async start(): Promise<void> {
    await this.listen(false);
  }

  onApplicationBootstrap(): Promise<void> {
    return this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async listen(again: boolean): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.opts.url, connectionTimeoutMillis: 5000, keepAlive: true });
    let lost = false;
    const onLost = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = undefined;
      void client.end().catch(() => undefined);
      if (this.stopped) return;
      this.log.warn(
        { err: err === undefined ? 'connection ended' : String(err) },
        'not listening for task changes; watchers poll until it listens again',
      );
      this.later();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (n) => {
      if (n.channel === this.signal.channel && n.payload) this.heard(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.signal.channel}`);
    } catch (err) {
      onLost(err);
      return;
    }
    if (lost) return;
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    if (again) {
      this.log.info('listening for task changes again');
      // What was committed elsewhere while nobody listened was never told.
      this.changes.readAll();
    }
  }

  private later(): void {
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.listen(true), this.opts.retryMs ?? 1000);
    this.retry.unref();
  }

  private heard(payload: string): void {
    const space = payload.indexOf(' ');
    if (space <= 0 || payload.slice(0, space) === this.signal.sender) return;
    for (const taskId of payload.slice(space + 1).split(',')) if (taskId) this.changes.storedElsewhere(taskId);
  }
}

/**
 * What one notification carries, wherever it is sent (the projection's statement, the teller): at
 * most this many ids of at most this many characters, well under NOTIFY's 8000-byte payload. A
 * longer id is not told: its watchers read it on their polls.
 */
export const NOTIFIED_IDS = { perNotification: 50, maxLength: 128 } as const;

/**
 * Tells the other replicas which tasks a commit here changed, for the paths whose statement does
 * not (a cancel, a deadline, delegation, a follow-up turn): one NOTIFY per burst of commits, after
 * they committed. If it fails the others' watchers read on their polls: it is logged, never thrown.
 */
export class TaskCommitTeller {
  private pending = new Set<string>();
  private scheduled = false;
  private readonly log: Logger;

  constructor(
    private readonly ds: { query(sql: string, params: unknown[]): Promise<unknown> },
    private readonly signal: TaskCommitSignal,
    logger: Logger = silentLogger,
  ) {
    this.log = logger.child({ src: 'task-commit-feed' });
  }

  tell(taskIds: Iterable<string>): void {
    for (const id of taskIds) if (id.length <= NOTIFIED_IDS.maxLength) this.pending.add(id);
    if (this.scheduled || this.pending.size === 0) return;
    this.scheduled = true;
    setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const ids = [...this.pending];
    this.pending = new Set();
    for (let i = 0; i < ids.length; i += NOTIFIED_IDS.perNotification) {
      const payload = `${this.signal.sender} ${ids.slice(i, i + NOTIFIED_IDS.perNotification).join(',')}`;
      await this.ds.query('SELECT pg_notify($1, $2)', [this.signal.channel, payload]).catch((err: unknown) => {
        this.log.warn({ err: String(err) }, 'cannot tell the other replicas of a change; their watchers read it on their polls');
      });
    }
  }
}
