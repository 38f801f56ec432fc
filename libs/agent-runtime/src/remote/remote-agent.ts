import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { CancelTaskRequest, GetTaskRequest, Message, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { defineAgent, Outcomes, type AgentContext, type AgentDefinition, type AgentTask, type TurnOutcome } from '@mesh/agent-sdk';
import { executionId, isAgentId, isJsonObject, MeshError, sleep, type JsonObject } from '@mesh/contract';
import { EgressPolicy, EgressRefused } from '@mesh/egress';
import type { EffectLedger, NewEffect } from '@mesh/tool-gateway';
import { silentLogger, type Logger } from '@mesh/telemetry';
import { fromWireArtifact, fromWireMessage, toWireParts } from '../runtime/a2a-wire.js';
import { TurnUnavailable } from '../runtime/turn-runner.js';
import { remoteCredentials, type RemoteCredentials } from './remote-credentials.js';
import type { RemoteTaskLedger, RemoteTaskRef } from './remote-task-ledger.js';

const secretRef = z.union([z.object({ env: z.string().min(1) }).strict(), z.object({ file: z.string().min(1) }).strict()]);

/** One remote agent as a team configures it (BRIDGE_REMOTE_AGENTS holds an array of these). */
export const remoteAgentSpecSchema = z
  .object({
    /** The mesh agent id (topic names, URLs). */
    id: z.string().refine(isAgentId, 'must be an agent id: lower-case letters, digits and dashes'),
    /** The remote's agent card URL (e.g. https://team.example/.well-known/agent-card.json). */
    cardUrl: z.string().url(),
    /** Credentials by reference; default none. */
    auth: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('none') }).strict(),
        z.object({ type: z.literal('bearer'), token: secretRef }).strict(),
        z.object({ type: z.literal('api-key'), header: z.string().min(1), key: secretRef }).strict(),
        z
          .object({
            type: z.literal('oauth2-client-credentials'),
            tokenUrl: z.string().url(),
            clientId: z.string().min(1),
            clientSecret: secretRef,
            scope: z.string().optional(),
            audience: z.string().optional(),
          })
          .strict(),
      ])
      .default({ type: 'none' }),
    /** Turns sent to the remote at once per bridge process. */
    maxInFlight: z.number().int().min(1).max(1024).default(16),
    visibility: z.enum(['private', 'tenant', 'public']).default('tenant'),
    /** The remote returns the first task for a repeated messageId: a takeover may resend. */
    messageIdDedup: z.boolean().default(false),
    /** Lets the card and interface URLs be loopback or private addresses (development only). */
    allowLoopback: z.boolean().default(false),
    /** GetTask polling interval for a remote without streaming (ms). */
    pollIntervalMs: z.number().int().min(10).max(60_000).default(1000),
    /** Consecutive failures (unreachable, 5xx, timeouts) that open the breaker. */
    breakerFailures: z.number().int().min(1).max(1000).default(5),
    /** How long the breaker stays open before one turn tries the remote again (ms). */
    breakerOpenMs: z.number().int().min(10).max(3_600_000).default(30_000),
  })
  .strict();

export type RemoteAgentSpecInput = z.input<typeof remoteAgentSpecSchema>;
export type RemoteAgentSpec = z.output<typeof remoteAgentSpecSchema>;

/** Validates specs; the error names the spec and field. */
export function parseRemoteAgentSpecs(raw: unknown): RemoteAgentSpec[] {
  if (!Array.isArray(raw)) throw new MeshError('CONFIG_INVALID', 'remote agents: expected a JSON array of specs');
  const ids = new Set<string>();
  return raw.map((item, i) => {
    const r = remoteAgentSpecSchema.safeParse(item);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      throw new MeshError('CONFIG_INVALID', `remote agent [${i}]: ${issue.path.join('.') || '(spec)'}: ${issue.message}`);
    }
    if (ids.has(r.data.id)) throw new MeshError('CONFIG_INVALID', `remote agent [${i}]: id "${r.data.id}" appears twice`);
    ids.add(r.data.id);
    return r.data;
  });
}

/** What the runtime gives a remote agent when its channel starts. */
export interface RemoteAgentHost {
  effects: EffectLedger;
  remoteTasks: RemoteTaskLedger;
  /** Holds this agent's runs back for `ms` (429/503 with Retry-After). */
  pause(ms: number): void;
  workerId: string;
  logger: Logger;
}

/** The runtime's handle on a remote agent definition. */
export interface RemoteAgentBinding {
  attach(host: RemoteAgentHost): void;
  /** False while the breaker is open: the worker does not announce the agent. */
  available(): boolean;
  close(): void;
}

const bindings = new WeakMap<AgentDefinition, RemoteAgentBinding>();

/** The binding of a definition made by {@link remoteAgent}; undefined for any other agent. */
export function remoteBindingOf(agent: AgentDefinition): RemoteAgentBinding | undefined {
  return bindings.get(agent);
}

/** The remote refused the request without doing it (429, 503): pause, then try again. */
class RemoteBusy extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number,
  ) {
    super(`the remote agent answered ${status}; retry after ${retryAfterMs} ms`);
  }
}

/** The request never reached the remote (connection refused, name not found). */
class RemoteUnreachable extends Error {}

/** The remote failed (5xx, timeout, connection lost): the request may have been processed. */
class RemoteFailure extends Error {}

const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Retry-After in seconds or as an HTTP date; bounded to 1 s … 5 min (default 1 s). */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  if (!header) return 1000;
  const secs = Number(header);
  const ms = Number.isFinite(secs) ? secs * 1000 : Date.parse(header) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 1000), 300_000) : 1000;
}

function causeCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++)
    if (typeof e.code === 'string') return e.code;
  return undefined;
}

/**
 * fetch for one remote agent: every URL passes the egress policy (card, interfaces), redirects are
 * refused, the credentials' headers are added, a 401 drops the cached token and is retried once,
 * and 429/503, 5xx and connection failures become errors the turn can tell apart.
 */
export function remoteFetch(egress: EgressPolicy, credentials: RemoteCredentials, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    await egress.check(url);
    const send = async () => {
      const headers = { ...Object.fromEntries(new Headers(init?.headers)), ...(await credentials.headers(init?.signal ?? undefined)) };
      try {
        return await base(url, { ...init, headers, redirect: 'manual' });
      } catch (err) {
        if (init?.signal?.aborted) throw err;
        const code = causeCode(err);
        if (code && NOT_CONNECTED.has(code)) throw new RemoteUnreachable(`cannot reach the remote agent (${code})`, { cause: err });
        throw new RemoteFailure(`the request to the remote agent failed: ${(err as Error).message}`, { cause: err });
      }
    };
    let res = await send();
    if (res.status === 401) {
      credentials.rejected();
      res = await send();
    }
    if (res.status >= 300 && res.status < 400) throw new EgressRefused(`redirect (${res.status}) not followed`);
    if (res.status === 429 || res.status === 503) throw new RemoteBusy(res.status, retryAfterMs(res.headers.get('retry-after')));
    if (res.status >= 500) throw new RemoteFailure(`the remote agent answered ${res.status}`);
    return res;
  };
}

/** Consecutive failures open it; after `openMs` one turn may try again (half open). */
class Breaker {
  private failures = 0;
  private openUntil = 0;
  constructor(
    private readonly threshold: number,
    private readonly openMs: number,
  ) {}
  allows(): boolean {
    return Date.now() >= this.openUntil;
  }
  success(): void {
    this.failures = 0;
  }
  failure(): void {
    if (++this.failures >= this.threshold) this.openUntil = Date.now() + this.openMs;
  }
}

const SEND_LEASE_MS = 60_000;
/** A2A state → outcome of an interrupted or final turn; undefined for a state the task goes on from. */
const FINAL: Record<string, TurnOutcome['state']> = {
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};

export interface RemoteAgentOptions {
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** The fetch the remote calls go through (tests). */
  fetch?: typeof fetch;
}

/**
 * An agent served by a team's own A2A server. The definition runs in the ordinary runtime (tenancy,
 * dedup, streams, push, deadlines stay the platform's); its handler relays each turn to ONE remote
 * task: the messageId derives from the execution id, the remote task id is recorded in the
 * execution ledger before its events are relayed, and a send whose result was never recorded is an
 * unknown outcome (effect ledger), never sent again unless the remote deduplicates messageId.
 * Fetches the remote's card (through the egress policy): it is the card registered in the directory.
 */
export async function remoteAgent(input: RemoteAgentSpecInput, opts: RemoteAgentOptions = {}): Promise<AgentDefinition> {
  const [spec] = parseRemoteAgentSpecs([input]);
  const egress = new EgressPolicy(
    spec.allowLoopback ? { allowCidrs: ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } : {},
  );
  const credentials = remoteCredentials(spec.auth, { ...(opts.env ? { env: opts.env } : {}), egress });
  const fetchImpl = remoteFetch(egress, credentials, opts.fetch);
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  let raw: unknown;
  try {
    const res = await fetchImpl(spec.cardUrl, { headers: { 'a2a-version': '1.0', accept: 'application/json' } });
    if (!res.ok) throw new Error(`answered ${res.status}`);
    raw = await res.json();
  } catch (err) {
    throw new MeshError('UNAVAILABLE', `remote agent ${spec.id}: cannot fetch its card at ${spec.cardUrl}: ${(err as Error).message}`, {
      retryable: true,
      cause: err,
    });
  }
  if (!isJsonObject(raw) || typeof raw.name !== 'string')
    throw new MeshError('CONFIG_INVALID', `remote agent ${spec.id}: ${spec.cardUrl} is not an agent card (no name)`);
  const card = resolver.normalizeAgentCard(raw);
  const client = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: resolver,
      clientConfig: { polling: true },
    }),
  ).createFromAgentCard(card);
  const relay = new RemoteRelay(spec, client, card.capabilities?.streaming === true, opts.logger ?? silentLogger);
  const def = defineAgent({
    id: spec.id,
    card: raw as JsonObject & { name: string },
    channel: { visibility: spec.visibility, maxInFlight: spec.maxInFlight },
    handler: (task, ctx) => relay.turn(task, ctx),
  });
  bindings.set(def, {
    attach: (host) => relay.attach(host),
    available: () => relay.breaker.allows(),
    close: () => credentials.close(),
  });
  return def;
}

/** One turn's view of the remote task it follows. */
interface Following {
  remote?: RemoteTaskRef;
  seenArtifacts: Set<string>;
  lastStatus?: string;
  /**
   * On a follow-up: the remote answers first with the task as the previous turn left it (input
   * required); that status, seen again, is not this turn's end.
   */
  continuing?: boolean;
  staleStatus?: string;
}

/** Relays turns of one remote agent. */
class RemoteRelay {
  readonly breaker: Breaker;
  private host?: RemoteAgentHost;
  private log: Logger;

  constructor(
    private readonly spec: RemoteAgentSpec,
    private readonly client: Client,
    private readonly streaming: boolean,
    logger: Logger,
  ) {
    this.breaker = new Breaker(spec.breakerFailures, spec.breakerOpenMs);
    this.log = logger.child({ src: 'remote-agent', agent: spec.id });
  }

  attach(host: RemoteAgentHost): void {
    this.host = host;
    this.log = host.logger.child({ src: 'remote-agent', agent: this.spec.id });
  }

  async turn(task: AgentTask, ctx: AgentContext): Promise<TurnOutcome> {
    const host = this.host;
    if (!host) throw new MeshError('INTERNAL', `remote agent ${this.spec.id} runs outside the agents runtime`);
    if (!this.breaker.allows()) throw new TurnUnavailable(`remote agent ${this.spec.id} is unavailable (its breaker is open)`);
    const execId = executionId(task.tenant, task.taskId, task.turn);
    const messageId = `mesh-${execId}`;
    const owner = `${host.workerId}/${randomUUID().slice(0, 8)}`;
    const effect: NewEffect = {
      key: messageId,
      tenant: task.tenant,
      taskId: task.taskId,
      executionId: execId,
      tool: `a2a__${this.spec.id}__SendMessage`,
      argsHash: messageId,
      args: { message_id: messageId },
      sideEffect: true,
      owner,
    };
    const f: Following = { seenArtifacts: new Set() };
    // A cancel or the deadline: the remote task is canceled too (the turn itself ends at once).
    const onAbort = () => void this.cancelRemote(f.remote);
    task.signal.addEventListener('abort', onAbort, { once: true });
    try {
      f.remote = await host.remoteTasks.of(execId);
      if (f.remote) return await this.follow(task, ctx, f);
      const claim = await host.effects.claim(effect, SEND_LEASE_MS);
      let resend = false;
      if (claim.kind !== 'claimed') {
        const e = claim.entry;
        const data = e.result?.data;
        if (e.state === 'ok' && typeof data?.remote_task_id === 'string') {
          f.remote = { taskId: data.remote_task_id, contextId: typeof data.remote_context_id === 'string' ? data.remote_context_id : '' };
          await host.remoteTasks.record(execId, f.remote);
          return await this.follow(task, ctx, f);
        }
        if (e.state === 'ok') return Outcomes.completed(e.result?.text);
        if (e.state === 'error') return Outcomes.failed(`The remote agent refused the message: ${e.result?.text ?? ''}`);
        if (!this.spec.messageIdDedup) return unknownOutcome(messageId);
        // The remote returns the task it created for this messageId, if it created one.
        resend = true;
      }
      return await this.send(task, ctx, f, { execId, messageId, owner, resend });
    } finally {
      task.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Sends the turn's message (once per execution), records the remote task, then relays its events. */
  private async send(
    task: AgentTask,
    ctx: AgentContext,
    f: Following,
    s: { execId: string; messageId: string; owner: string; resend: boolean },
  ): Promise<TurnOutcome> {
    const host = this.host!;
    // A follow-up turn (after INPUT_REQUIRED / AUTH_REQUIRED) continues the same remote task.
    // A resend asks only for the task the remote made of the first send (its answer to a repeated
    // messageId), then follows it like any known task.
    const stream = this.streaming && !s.resend;
    const previous = task.turn > 0 ? await host.remoteTasks.previous(task.tenant, task.taskId, task.turn) : undefined;
    f.continuing = previous !== undefined;
    const request = SendMessageRequest.fromJSON({
      message: {
        messageId: s.messageId,
        role: 'ROLE_USER',
        parts: toWireParts(task.parts),
        ...(previous ? { taskId: previous.taskId, contextId: previous.contextId } : {}),
        // Who the work is for, readable by the remote; never the caller's token.
        metadata: { ...(task.message.metadata ?? {}), 'mesh/tenant': task.tenant, 'mesh/subject': task.subject, 'mesh/actor': task.actor },
      },
      configuration: { returnImmediately: !stream },
    });
    /** The remote named its task (or, undefined, answered with a message and no task): the send is settled. */
    const known = async (ref: RemoteTaskRef | undefined) => {
      if (f.remote) return;
      if (ref) {
        f.remote = ref;
        await host.remoteTasks.record(s.execId, ref);
      }
      const result = ref
        ? { text: `remote task ${ref.taskId}`, data: { remote_task_id: ref.taskId, remote_context_id: ref.contextId } }
        : { text: 'answered with a message, no task' };
      if (s.resend) await host.effects.resolve(s.messageId, 'ok', result);
      else await host.effects.complete(s.messageId, s.owner, 'ok', result);
      this.breaker.success();
    };
    try {
      if (stream) {
        let outcome: TurnOutcome | undefined;
        for await (const ev of this.client.sendMessageStream(request, { signal: task.signal })) {
          outcome = await this.relay(ctx, f, StreamResponse.toJSON(ev) as JsonObject, known);
          if (outcome) return outcome;
        }
      } else {
        const r = await this.client.sendMessage(request, { signal: task.signal });
        const json = 'messageId' in r ? { message: Message.toJSON(r) } : { task: Task.toJSON(r) };
        const outcome = await this.relay(ctx, f, json as JsonObject, known);
        if (outcome) return outcome;
      }
    } catch (err) {
      if (task.signal.aborted) throw err;
      if (!f.remote) return this.sendFailed(err, s);
      this.log.warn({ error: String(err), remoteTask: f.remote.taskId }, 'lost the remote task stream; following it again');
    }
    if (!f.remote) return this.sendFailed(new RemoteFailure('the remote agent answered without a task'), s);
    return this.follow(task, ctx, f);
  }

  /** The send failed before the remote named a task. */
  private async sendFailed(err: unknown, s: { messageId: string; owner: string; resend: boolean }): Promise<TurnOutcome> {
    const host = this.host!;
    const notSent = err instanceof RemoteBusy || err instanceof RemoteUnreachable || err instanceof EgressRefused;
    if (err instanceof RemoteBusy) host.pause(err.retryAfterMs);
    if (err instanceof RemoteUnreachable || err instanceof RemoteFailure) this.breaker.failure();
    if (notSent) {
      // Never reached the remote: forget the send (a resend's entry stays unknown until it is known).
      if (!s.resend) await host.effects.release(s.messageId, s.owner);
      if (err instanceof EgressRefused) return Outcomes.failed(`The remote agent's URL is refused: ${err.message}`);
      throw new TurnUnavailable(`remote agent ${this.spec.id}: ${(err as Error).message}`, { cause: err });
    }
    if (this.spec.messageIdDedup) throw new TurnUnavailable(`remote agent ${this.spec.id}: ${String(err)}; resending the same message`);
    if (!s.resend) await host.effects.markUnknown(s.messageId, s.owner, `the send may have reached the remote agent: ${String(err)}`);
    return unknownOutcome(s.messageId);
  }

  /** Follows a known remote task to its end: resubscribes when the remote streams, else polls GetTask. */
  private async follow(task: AgentTask, ctx: AgentContext, f: Following): Promise<TurnOutcome> {
    const ref = f.remote!;
    const noop = async () => undefined;
    if (this.streaming) {
      try {
        for await (const ev of this.client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: ref.taskId }), { signal: task.signal })) {
          const outcome = await this.relay(ctx, f, StreamResponse.toJSON(ev) as JsonObject, noop);
          if (outcome) return outcome;
        }
      } catch (err) {
        if (task.signal.aborted) throw err;
        // A task already final cannot be subscribed to: GetTask below reads its end.
      }
    }
    for (let failures = 0; ;) {
      try {
        const t = await this.client.getTask(GetTaskRequest.fromJSON({ id: ref.taskId }), { signal: task.signal });
        failures = 0;
        this.breaker.success();
        const outcome = await this.relay(ctx, f, { task: Task.toJSON(t) } as JsonObject, noop);
        if (outcome) return outcome;
      } catch (err) {
        if (task.signal.aborted) throw err;
        if (err instanceof RemoteBusy) this.host!.pause(err.retryAfterMs);
        else if (err instanceof RemoteUnreachable || err instanceof RemoteFailure) this.breaker.failure();
        // The remote task id is recorded: the next delivery resumes it, nothing is sent again.
        if (++failures >= 3 || !this.breaker.allows()) throw new TurnUnavailable(`remote agent ${this.spec.id}: ${String(err)}`);
      }
      await sleep(this.spec.pollIntervalMs, task.signal);
      if (task.signal.aborted) throw task.signal.reason;
    }
  }

  /** Relays one A2A stream response; the turn's outcome when the remote task ended or was interrupted. */
  private async relay(
    ctx: AgentContext,
    f: Following,
    ev: JsonObject,
    known: (ref: RemoteTaskRef | undefined) => Promise<void>,
  ): Promise<TurnOutcome | undefined> {
    if (isJsonObject(ev.message)) {
      // A direct reply, no task: the reply is the result, kept as the task's artifact (a mesh task
      // completes only with one).
      const m = fromWireMessage(ev.message);
      await known(undefined);
      await ctx.artifact({ name: 'response', parts: m.parts });
      return { state: 'completed', message: { ...m, role: 'agent' } };
    }
    const body = (isJsonObject(ev.task) ? ev.task : isJsonObject(ev.statusUpdate) ? ev.statusUpdate : ev.artifactUpdate) as
      JsonObject | undefined;
    if (!body) return undefined;
    const taskId = typeof body.id === 'string' ? body.id : body.taskId;
    if (typeof taskId === 'string' && taskId) await known({ taskId, contextId: typeof body.contextId === 'string' ? body.contextId : '' });
    const artifacts = isJsonObject(ev.artifactUpdate)
      ? [ev.artifactUpdate.artifact]
      : isJsonObject(ev.task) && Array.isArray(ev.task.artifacts)
        ? ev.task.artifacts
        : [];
    for (const a of artifacts) {
      if (!isJsonObject(a)) continue;
      const id = typeof a.artifactId === 'string' ? a.artifactId : '';
      // A task snapshot (polling, resubscribe) repeats the artifacts already relayed.
      if (isJsonObject(ev.task) && f.seenArtifacts.has(id)) continue;
      f.seenArtifacts.add(id);
      await ctx.artifact(fromWireArtifact(a));
    }
    const status = isJsonObject(body.status) ? body.status : undefined;
    if (!status || isJsonObject(ev.artifactUpdate)) return undefined;
    const state = typeof status.state === 'string' ? status.state : '';
    if (f.continuing && isJsonObject(ev.task)) {
      f.continuing = false;
      f.staleStatus = JSON.stringify(status);
    }
    if (f.staleStatus === JSON.stringify(status)) return undefined;
    const message = isJsonObject(status.message) ? { ...fromWireMessage(status.message), role: 'agent' as const } : undefined;
    const final = FINAL[state];
    if (final) {
      const msg = message ?? {
        role: 'agent' as const,
        parts: [{ type: 'text' as const, text: `The remote agent ended the task: ${state}.` }],
      };
      return final === 'completed'
        ? message
          ? { state: 'completed', message }
          : { state: 'completed' }
        : ({ state: final, message: msg } as TurnOutcome);
    }
    // Progress: a status message not relayed yet (a poll sees the same status again).
    const key = JSON.stringify(status.message ?? null) + state;
    if (message && key !== f.lastStatus) {
      f.lastStatus = key;
      const text = message.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
      if (text) await ctx.progress(text);
    }
    return undefined;
  }

  /** CancelTask on the remote, bounded; its failure is logged (the mesh task is canceled anyway). */
  private async cancelRemote(ref: RemoteTaskRef | undefined): Promise<void> {
    if (!ref) return;
    try {
      await this.client.cancelTask(CancelTaskRequest.fromJSON({ id: ref.taskId }), { signal: AbortSignal.timeout(5000) });
    } catch (err) {
      this.log.warn({ error: String(err), remoteTask: ref.taskId }, 'CancelTask on the remote agent failed');
    }
  }
}

/** A send that may have reached the remote, with nothing recorded: never sent twice. */
function unknownOutcome(messageId: string): TurnOutcome {
  return {
    state: 'failed',
    message: {
      role: 'agent',
      parts: [
        {
          type: 'text',
          text:
            'The outcome of the message to the remote agent is unknown: it may have been received, and the remote ' +
            'does not deduplicate messages, so it is not sent again. An operator resolves it (/ops/unknowns).',
        },
      ],
      metadata: { 'mesh/remote_outcome': 'unknown', 'mesh/idempotency_key': messageId },
    },
  };
}
