// The dispatcher's team bindings (PUT/GET/DELETE /ops/teams, bearer DISPATCHER_OPS_TOKEN): which
// agents a team's key signs events for, its tenant and tool audiences.
import type { JWK } from 'jose';
import { requestJson } from '../http-client.js';

/** Where the dispatcher is and its ops token; undefined when the binding step is skipped (--no-dispatcher). */
export interface DispatcherTarget {
  url: string;
  token?: string;
}

export interface TeamBindingInput {
  tenant: string;
  agents: string[];
  eventKeys: { keys: JWK[] };
  toolAudiences: string[];
  kafkaPrincipal: string;
}

/** A binding as GET /ops/teams lists it. */
export interface TeamBinding {
  name: string;
  tenant: string;
  agents: string[];
  toolAudiences: string[];
  kafkaPrincipal: string;
  keyIds: string[];
  createdAt: string;
  revokedAt: string | null;
}

const call = <T>(d: DispatcherTarget, path: string, init: { method?: string; body?: unknown } = {}) =>
  requestJson<T>('dispatcher', d.url, `/ops/teams${path}`, { ...init, credential: 'opsToken', ...(d.token ? { token: d.token } : {}) });

export const listBindings = async (d: DispatcherTarget) => (await call<{ teams: TeamBinding[] }>(d, '')).teams;

export const putBinding = (d: DispatcherTarget, name: string, binding: TeamBindingInput) =>
  call<{ team: TeamBinding }>(d, `/${encodeURIComponent(name)}`, { method: 'PUT', body: binding });

export const deleteBinding = (d: DispatcherTarget, name: string) => call<void>(d, `/${encodeURIComponent(name)}`, { method: 'DELETE' });
