import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import type { DataSource } from 'typeorm';
import { EgressPolicy, EgressRefused, PinnedHttpClient } from '@mesh/egress';
import { newId } from '@mesh/contract';
import { silentLogger, type Logger, type MeshMetrics } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import { UPSERT_PUSH_CONFIG, type PushWireVersion, type ValidPushConfig } from './push-config.js';

/** Header carrying the stable id of the event a push notification is about (receivers dedup on it). */
export const PUSH_EVENT_ID_HEADER = 'x-a2a-event-id';
/**
 * Header carrying the event's number in the task's stream (the SSE `id:` streams show for it), so
 * a receiver can resume a stream after it with Last-Event-ID. Absent for a delivery recorded
 * after the change (a config added for an event already projected).
 */
export const PUSH_STREAM_EVENT_ID_HEADER = 'x-a2a-stream-event-id';
/** Header carrying the config's token. */
export const PUSH_TOKEN_HEADER = 'x-a2a-notification-token';

export interface PushOptions {
  allowCidrs: string[];
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  timeoutMs: number;
  pollMs: number;
  /** Whether this replica polls for deliveries nobody woke it for (retries, another replica's rows). */
  sweeps: SweepTurn;
  /** The service's logger (lines carry `src: push`). */
  logger?: Logger;
}

interface ConfigRow {
  tenant: string;
  task_id: string;
  id: string;
  url: string;
  token: string;
  auth_scheme: string | null;
  auth_credentials: string | null;
}

const toConfig = (r: ConfigRow): TaskPushNotificationConfig => ({
  tenant: '',
  id: r.id,
  taskId: r.task_id,
  url: r.url,
  token: r.token,
  authentication: r.auth_scheme ? { scheme: r.auth_scheme, credentials: r.auth_credentials ?? '' } : undefined,
});

const v03Bodies = new V03PushNotificationSerializer();

/**
 * What a webhook is sent: the stored body (a 1.0 StreamResponse as JSON) as it is, or, for a config
 * a 0.3 caller set, the 0.3 event it stands for (`kind: "status-update"` …), as the SDK's 0.3
 * serializer writes it.
 */
export function pushBody(stored: unknown, wireVersion: string): { body: string; contentType: string } {
  if (wireVersion !== '0.3') return { body: JSON.stringify(stored), contentType: 'application/json' };
  const legacy = v03Bodies.serialize(StreamResponse.fromJSON(stored));
  return { body: legacy.body, contentType: legacy.contentType };
}

/**
 * Push notifications: configs per tenant and task in Postgres, and deliveries driven from the
 * event stream. The projector records one delivery per (config, event) in the statement that
 * applies the event, for the configs the task has then — keyed by the event's stable id
 * `{executionId}:{seq}`; a re-consumed event adds nothing — and a delivery loop
 * (SKIP LOCKED claims, shared by the replicas) POSTs them in order per (task, config) through the
 * SSRF-checked, DNS-pinned, no-redirect client, with exponential backoff up to a retry limit; what
 * keeps failing stays in `push_deliveries` with status `failed` and its last error.
 */
export class PushService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly http: PinnedHttpClient;
  private readonly policy: EgressPolicy;
  private readonly log: Logger;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = false;
  /** A commit here woke the loop during a run: run again at once, whether this replica polls or not. */
  private kickedWhileRunning = false;

  constructor(
    private readonly ds: DataSource,
    private readonly opts: PushOptions,
    private readonly metrics?: MeshMetrics,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'push' });
    this.policy = new EgressPolicy({ allowCidrs: opts.allowCidrs });
    this.http = new PinnedHttpClient(this.policy);
  }

  /**
   * Checks a config's URL against the egress policy and gives the config an id when it has none.
   * Its shape (an absolute http(s) URL, ids, header-safe token and credentials) was checked at the
   * A2A edge (a2a-request.schemas.ts).
   */
  async validate(cfg: TaskPushNotificationConfig, wireVersion: PushWireVersion = '1.0'): Promise<ValidPushConfig> {
    try {
      await this.policy.check(cfg.url);
    } catch (err) {
      if (err instanceof EgressRefused) {
        // A local receiver in development is the common case: say which setting admits a network.
        const hint = err.allowListMayAdmit ? ' (the operator may admit its network with PUSH_EGRESS_ALLOW_CIDRS, e.g. 127.0.0.0/8)' : '';
        // The caller hears the message (never what a name resolved to); the detail is for operators.
        this.log.debug({ detail: err.detail }, 'push URL refused');
        throw new RequestMalformedError(`push URL refused: ${err.message}${hint}`);
      }
      throw err;
    }
    return {
      // Kept as given (an id with spaces is the caller's id); empty, proto3's default, means none.
      id: cfg.id || newId(),
      url: cfg.url,
      token: cfg.token ?? '',
      authScheme: cfg.authentication?.scheme ?? null,
      authCredentials: cfg.authentication?.credentials ?? null,
      wireVersion,
    };
  }

  async create(
    tenant: string,
    taskId: string,
    cfg: TaskPushNotificationConfig,
    wireVersion: PushWireVersion = '1.0',
  ): Promise<TaskPushNotificationConfig> {
    await this.requireTask(tenant, taskId);
    const v = await this.validate(cfg, wireVersion);
    const rows: ConfigRow[] = await this.ds.query(`${UPSERT_PUSH_CONFIG} RETURNING *`, [
      tenant,
      taskId,
      v.id,
      v.url,
      v.token,
      v.authScheme,
      v.authCredentials,
      v.wireVersion,
    ]);
    return toConfig(rows[0]);
  }

  async get(tenant: string, taskId: string, id: string): Promise<TaskPushNotificationConfig> {
    await this.requireTask(tenant, taskId);
    const rows: ConfigRow[] = await this.ds.query(`SELECT * FROM dispatcher.push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [
      tenant,
      taskId,
      id,
    ]);
    if (!rows[0]) throw new TaskNotFoundError(`push notification config ${id} not found for task ${taskId}`);
    return toConfig(rows[0]);
  }

  async list(tenant: string, taskId: string): Promise<TaskPushNotificationConfig[]> {
    await this.requireTask(tenant, taskId);
    const rows: ConfigRow[] = await this.ds.query(
      `SELECT * FROM dispatcher.push_configs WHERE tenant = $1 AND task_id = $2 ORDER BY created_at, id`,
      [tenant, taskId],
    );
    return rows.map(toConfig);
  }

  /** Idempotent: deleting what is not there succeeds. */
  async delete(tenant: string, taskId: string, id: string): Promise<void> {
    await this.requireTask(tenant, taskId);
    await this.ds.query(`DELETE FROM dispatcher.push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3`, [tenant, taskId, id]);
  }

  private async requireTask(tenant: string, taskId: string): Promise<void> {
    const rows = await this.ds.query(`SELECT 1 FROM dispatcher.tasks WHERE id = $1 AND tenant = $2`, [taskId, tenant]);
    if (rows.length === 0) throw new TaskNotFoundError(`Task not found: ${taskId}`);
  }

  /** Every replica looks once at start (what it left when it last stopped); then it polls under the lease. */
  start(): void {
    this.schedule(0, true);
  }

  /** Wakes the delivery loop now (or right after the run in progress, which may have missed the rows). */
  kick(): void {
    if (this.running) this.kickedWhileRunning = true;
    else if (!this.stopped) this.schedule(0, true);
  }

  /** `woken`: by a commit here or by a full batch; otherwise a poll, run where the sweep lease is held. */
  private schedule(ms: number, woken = false): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!woken && !this.opts.sweeps.held) {
        this.schedule(this.opts.pollMs);
        return;
      }
      this.running = this.deliverDue()
        .catch((err) => this.log.warn({ err: String(err) }, 'delivery loop'))
        .then((more) => {
          this.running = undefined;
          const again = more === true || this.kickedWhileRunning;
          this.kickedWhileRunning = false;
          this.schedule(again ? 0 : this.opts.pollMs, again);
        });
    }, ms);
  }

  /**
   * Claims due deliveries (a lease: next_at moves past the request timeout), sends them, records the
   * outcome. Only the oldest pending delivery of each (task, config) is due: one in flight per
   * subscription, so a receiver gets a task's events in the order they were projected, retries
   * included (a WORKING retried after COMPLETED went out would look like a step back).
   */
  private async deliverDue(): Promise<boolean> {
    const lease = Math.ceil((this.opts.timeoutMs * 2) / 1000);
    type Due = {
      id: string;
      event_id: string;
      body: unknown;
      stream_seq: string | null;
      attempts: number;
      url: string;
      token: string;
      auth_scheme: string | null;
      auth_credentials: string | null;
      wire_version: string;
    };
    // TypeORM answers an UPDATE with [rows, affected].
    const [due] = (await this.ds.query(
      `WITH c AS (
           SELECT d.id FROM dispatcher.push_deliveries d
            WHERE d.status = 'pending' AND d.next_at <= now()
              AND NOT EXISTS (SELECT 1 FROM dispatcher.push_deliveries e
                               WHERE e.tenant = d.tenant AND e.task_id = d.task_id AND e.config_id = d.config_id
                                 AND e.status = 'pending' AND e.id < d.id)
           ORDER BY d.next_at, d.id LIMIT 20 FOR UPDATE OF d SKIP LOCKED)
         UPDATE dispatcher.push_deliveries d SET next_at = now() + make_interval(secs => $1)
           FROM c, dispatcher.push_configs p
          WHERE d.id = c.id AND p.tenant = d.tenant AND p.task_id = d.task_id AND p.id = d.config_id
         RETURNING d.id, d.event_id, d.body, d.stream_seq, d.attempts, p.url, p.token, p.auth_scheme, p.auth_credentials, p.wire_version`,
      [lease],
    )) as [Due[], number];
    await Promise.all(
      due.map(async (d) => {
        const { body, contentType } = pushBody(d.body, d.wire_version);
        const headers: Record<string, string> = { 'content-type': contentType, [PUSH_EVENT_ID_HEADER]: d.event_id };
        if (d.stream_seq !== null) headers[PUSH_STREAM_EVENT_ID_HEADER] = String(d.stream_seq);
        if (d.token) headers[PUSH_TOKEN_HEADER] = d.token;
        if (d.auth_scheme) headers.authorization = `${d.auth_scheme} ${d.auth_credentials ?? ''}`;
        let error: string | undefined;
        let permanent = false;
        try {
          const res = await this.http.request(d.url, {
            method: 'POST',
            headers,
            body,
            timeoutMs: this.opts.timeoutMs,
            maxResponseBytes: 4096,
          });
          if (res.status < 200 || res.status >= 300) {
            error = `HTTP ${res.status}`;
            // Redirects are never followed and a 4xx will not change by retrying (408/429 excepted).
            permanent = res.status >= 300 && res.status < 500 && res.status !== 408 && res.status !== 429;
          }
        } catch (err) {
          // push_deliveries is read by operators only: it keeps the refusal's detail.
          error = err instanceof EgressRefused ? err.detail : String(err instanceof Error ? err.message : err);
          permanent = err instanceof EgressRefused;
        }
        if (!error) {
          await this.ds.query(
            `UPDATE dispatcher.push_deliveries SET status = 'delivered', attempts = attempts + 1, delivered_at = now(), last_error = NULL WHERE id = $1`,
            [d.id],
          );
          this.metrics?.pushDeliveries.inc({ result: 'delivered' });
          return;
        }
        const attempts = d.attempts + 1;
        if (permanent || attempts >= this.opts.maxAttempts) {
          await this.ds.query(`UPDATE dispatcher.push_deliveries SET status = 'failed', attempts = $2, last_error = $3 WHERE id = $1`, [
            d.id,
            attempts,
            error,
          ]);
          this.metrics?.pushDeliveries.inc({ result: 'failed' });
          return;
        }
        const backoff = Math.min(this.opts.backoffMaxMs, this.opts.backoffBaseMs * 2 ** (attempts - 1));
        await this.ds.query(
          `UPDATE dispatcher.push_deliveries SET attempts = $2, last_error = $3, next_at = now() + make_interval(secs => $4) WHERE id = $1`,
          [d.id, attempts, error, backoff / 1000],
        );
        this.metrics?.pushDeliveries.inc({ result: 'retried' });
      }),
    );
    // Delivering a row makes the next one of its subscription due: look again at once.
    return due.length > 0;
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
