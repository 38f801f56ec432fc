import type { AgentDefinition } from '@mesh/agent-sdk';
import { canonicalJson, MeshError, sleep } from '@mesh/contract';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { remoteBindingOf } from '../remote/remote-agent.js';

export interface DirectoryRegistrationOptions {
  /** Base URL of the directory, e.g. http://127.0.0.1:8081 */
  url: string;
  /** Bearer token (JWT or API key) of the tenant that owns the agents. */
  token: string;
  /** Publish any change of the card's content, not only a new version (default: for remote agents). */
  byContent?: boolean;
  attempts?: number;
  /** The service's logger (lines carry `src: directory-registration`). */
  logger?: Logger;
}

const logOf = (opts: DirectoryRegistrationOptions) => (opts.logger ?? silentLogger).child({ src: 'directory-registration' });

interface AgentView {
  tenant: string;
  /** Shown to the owning tenant only. */
  registeredBy?: string;
  version: number;
  visibility: string;
  card: { version?: string };
  channel: { keyTemplate: string; partitions: number };
}

/**
 * Registers each agent's card with the directory at start: created when missing, updated when its
 * card version, visibility or channel changed (teams bump `card.version` to publish a new card), left
 * alone otherwise so restarts add no versions. A key template the agent does not name is the
 * default only for a new agent: a registered one keeps its own, so a new default never moves a
 * running deployment's keys (docs/operations.md, "Adding a worker"). A refused card (validation, id taken — also by another
 * tenant's public agent, which this token can see but not own) stops the start.
 */
export async function registerWithDirectory(agents: AgentDefinition[], opts: DirectoryRegistrationOptions): Promise<void> {
  for (const agent of agents) await withRetries(() => registerOne(agent, opts), opts);
}

async function registerOne(agent: AgentDefinition, opts: DirectoryRegistrationOptions): Promise<void> {
  const base = opts.url.replace(/\/+$/, '');
  const bodyWith = (keyTemplate: string) => ({
    card: agent.card,
    channel: { keyTemplate, partitions: agent.channel.partitions },
    visibility: agent.channel.visibility,
  });
  const current = await call(base, opts.token, 'GET', `/v1/agents/${agent.id}`);
  if (current.status === 404) {
    const created = await call(base, opts.token, 'POST', '/v1/agents', { id: agent.id, ...bodyWith(agent.channel.keyTemplate) });
    if (created.status !== 201) throw refused(agent.id, created);
    logOf(opts).info({ agent: agent.id }, 'registered agent with the directory');
    return;
  }
  if (current.status !== 200) throw refused(agent.id, current);
  const view = current.body as AgentView;
  // Another tenant's public agent is visible to this token too: running it would consume the
  // commands of that tenant's callers.
  if (view.registeredBy === undefined) {
    throw new MeshError(
      'CONFIG_INVALID',
      `agent "${agent.id}" is registered in the directory by another tenant (${view.tenant}); this runtime's token does not own it`,
    );
  }
  // `keyTemplateNamed` undefined: a definition built without defineAgent names its template.
  const keyTemplate =
    agent.channel.keyTemplateNamed === false && view.channel?.keyTemplate ? view.channel.keyTemplate : agent.channel.keyTemplate;
  const body = bodyWith(keyTemplate);
  // A remote agent's card is the remote's: any change of content is published (its team may not
  // bump the version); a card written here is published when its version changes.
  const sameCard =
    (opts.byContent ?? remoteBindingOf(agent) !== undefined)
      ? canonicalJson(view.card) === canonicalJson(agent.card)
      : view.card?.version === agent.card.version;
  const unchanged =
    sameCard &&
    view.visibility === agent.channel.visibility &&
    view.channel?.keyTemplate === keyTemplate &&
    view.channel?.partitions === agent.channel.partitions;
  if (unchanged) return;
  const updated = await call(base, opts.token, 'PUT', `/v1/agents/${agent.id}`, body);
  if (updated.status !== 200) throw refused(agent.id, updated);
  logOf(opts).info({ agent: agent.id, version: (updated.body as AgentView).version }, 'updated agent in the directory');
}

async function call(base: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  let res: Response;
  try {
    res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10000),
    });
  } catch (cause) {
    throw new MeshError('UNAVAILABLE', `cannot reach the directory at ${base}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
      retryable: true,
    });
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // a non-JSON error page: keep the text for the message
  }
  return { status: res.status, body: parsed };
}

function refused(agentId: string, reply: { status: number; body: unknown }): MeshError {
  const b = reply.body as { code?: string; detail?: string; errors?: Array<{ field: string; message: string }> } | undefined;
  const detail = [b?.code, b?.detail, ...(b?.errors ?? []).map((e) => `${e.field}: ${e.message}`)].filter(Boolean).join('; ');
  // 5xx and 429 may pass; anything else is a problem with the agent's card or credentials.
  const retryable = reply.status >= 500 || reply.status === 429;
  return new MeshError(
    retryable ? 'UNAVAILABLE' : 'CONFIG_INVALID',
    `the directory refused agent "${agentId}" (${reply.status}): ${detail}`,
    {
      retryable,
    },
  );
}

async function withRetries(fn: () => Promise<void>, opts: DirectoryRegistrationOptions): Promise<void> {
  const attempts = opts.attempts ?? 5;
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof MeshError) || !err.retryable || i >= attempts) throw err;
      logOf(opts).warn({ attempt: i, error: err.message }, 'directory registration failed; retrying');
      await sleep(Math.min(5000, 250 * 2 ** i));
    }
  }
}
