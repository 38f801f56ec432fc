// Push records shared by the push feature and the task repository without either importing the
// other: a validated config (stored with the task that SendMessage starts or continues) and the
// statement recording a change's deliveries.
import type { TaskEvent } from '@mesh/contract';

/** A push config that passed `PushService.validate`, ready to be stored with a task id. */
export interface ValidPushConfig {
  id: string;
  url: string;
  token: string;
  authScheme: string | null;
  authCredentials: string | null;
  /** The A2A version the config was set over: its webhook gets bodies of that version's shape. */
  wireVersion: PushWireVersion;
}

/** Push bodies are 1.0 StreamResponses, or the 0.3 event for a config a 0.3 caller set. */
export type PushWireVersion = '1.0' | '0.3';

/** The wire version of a request (the SDK's ServerCallContext.requestedVersion: '0.3' for a 0.3 caller). */
export function wireVersionOf(requestedVersion: string | undefined): PushWireVersion {
  return requestedVersion?.startsWith('0.') ? '0.3' : '1.0';
}

/**
 * Stores a config ($1 tenant, $2 task id, $3 id, $4 url, $5 token, $6 auth scheme, $7 credentials,
 * $8 wire version); the same id replaces it.
 */
export const UPSERT_PUSH_CONFIG = `INSERT INTO dispatcher.push_configs (tenant, task_id, id, url, token, auth_scheme, auth_credentials, wire_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (tenant, task_id, id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token,
         auth_scheme = EXCLUDED.auth_scheme, auth_credentials = EXCLUDED.auth_credentials, wire_version = EXCLUDED.wire_version`;

/** The stable id of a worker event's push notification, `{executionId}:{seq}` (receivers dedup on it). */
export function pushEventIdOf(event: TaskEvent): string {
  return `${event.identity.executionId}:${event.body.seq}`;
}

/**
 * Records a notification for every push config of a task ($1 event id, $2 body, $3 tenant,
 * $4 task id, $5 the event's number in the task's stream); an event already recorded adds nothing.
 */
export const INSERT_TASK_DELIVERIES = `INSERT INTO dispatcher.push_deliveries (event_id, tenant, task_id, config_id, body, stream_seq)
       SELECT $1, c.tenant, c.task_id, c.id, $2, $5 FROM dispatcher.push_configs c WHERE c.tenant = $3 AND c.task_id = $4
       ORDER BY c.created_at, c.id ON CONFLICT DO NOTHING`;
