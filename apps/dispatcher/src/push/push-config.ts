// A push config as stored with a task: shared by the push feature (CRUD) and the task service (a
// config given with SendMessage is stored in the accept transaction), without either importing
// the other.

/** A push config that passed `PushService.validate`, ready to be stored with a task id. */
export interface ValidPushConfig {
  id: string;
  url: string;
  token: string;
  authScheme: string | null;
  authCredentials: string | null;
}

/** Stores a config ($1 tenant, $2 task id, $3 id, $4 url, $5 token, $6 auth scheme, $7 credentials); the same id replaces it. */
export const UPSERT_PUSH_CONFIG = `INSERT INTO dispatcher.push_configs (tenant, task_id, id, url, token, auth_scheme, auth_credentials)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (tenant, task_id, id) DO UPDATE SET url = EXCLUDED.url, token = EXCLUDED.token,
         auth_scheme = EXCLUDED.auth_scheme, auth_credentials = EXCLUDED.auth_credentials`;
