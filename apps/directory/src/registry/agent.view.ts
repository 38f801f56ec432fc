import { canSee, type AgentRecord, type AgentVisibility } from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import type { AgentEntity } from './agent.entity.js';
import { DirectoryError } from '../common/directory.exception.js';

/** An agent as the API returns it. */
export interface AgentView {
  id: string;
  tenant: string;
  visibility: AgentVisibility;
  version: number;
  card: AgentRecord['card'];
  /** Only shown to the owning tenant (how its workers are fed is its business). */
  channel?: { keyTemplate: string; partitions: number };
  /** Only shown to the owning tenant. */
  commandTopic?: string;
  retired: boolean;
  retiredAt: string | null;
  healthy: boolean;
  lastHeartbeatAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** Only shown to the owning tenant. */
  registeredBy?: string;
  /** Search rank (free-text queries only). */
  rank?: number;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** Builds the API view of a row (the caller has already been checked with `assertVisible`). */
export function agentView(a: AgentEntity, viewer: Principal, commandTopic: string, now = Date.now()): AgentView {
  const view: AgentView = {
    id: a.id,
    tenant: a.tenant,
    visibility: a.visibility,
    version: a.version,
    card: a.card as AgentRecord['card'],
    retired: a.retiredAt !== null,
    retiredAt: iso(a.retiredAt),
    healthy: a.retiredAt === null && a.healthyUntil !== null && new Date(a.healthyUntil).getTime() > now,
    lastHeartbeatAt: iso(a.lastHeartbeatAt),
    createdAt: iso(a.createdAt)!,
    updatedAt: iso(a.updatedAt)!,
  };
  if (a.tenant === viewer.tenant) {
    view.channel = { keyTemplate: a.channelKeyTemplate, partitions: a.partitions };
    view.commandTopic = commandTopic;
    view.registeredBy = a.registeredBy;
  }
  return view;
}

/** 404 unless the viewer may see the agent — another tenant's non-public agent does not exist for it. */
export function assertVisible<T extends Pick<AgentEntity, 'tenant' | 'visibility'>>(id: string, a: T | null, viewer: Principal): T {
  if (!a || !canSee(a, viewer.tenant)) throw DirectoryError.notFound(id);
  return a;
}

/** Only the owning tenant changes an agent; others who can see it (public) get 403. */
export function assertOwner(id: string, a: Pick<AgentEntity, 'tenant'>, viewer: Principal): void {
  if (a.tenant !== viewer.tenant) throw new DirectoryError('FORBIDDEN', `agent "${id}" belongs to another tenant`);
}
