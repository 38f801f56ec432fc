import { SdkHttpError } from '@modelcontextprotocol/client';
import { parseToolName, type McpServerSpec, type ToolIntent, type ToolObservation } from '@mesh/agent-sdk';
import { argsHash, clampTimerMs, idempotencyKey, MeshError, sleep, type ActorClaim, type JsonObject } from '@mesh/contract';
import { SpanAttr, withSpan } from '@mesh/telemetry';
import type { EffectEntry, EffectLedger, RecordedResult } from './effect-ledger.js';
import type { ToolInfo } from './mcp-connection.js';
import { McpSessionPool } from './mcp-session-pool.js';
import type { ToolCallResult } from './mcp-shapes.js';
import { Reconciler, type ReconcilerOptions } from './reconciler.js';
import type { RetryBudget } from './retry-budget.js';
import { abortError, SemaphoreSlotSupplier, type SlotSupplier } from './slot-supplier.js';
import { ToolMeta } from './tool-meta.js';
import type { ToolTokenMinter } from './tool-token.js';

/** Who calls and within which limits: one execution attempt of a task. */
export interface ToolCallScope {
  tenant: string;
  taskId: string;
  executionId: string;
  subject: string;
  /** Actor chain and scopes of the task (delegated work): carried into call tokens. */
  act?: ActorClaim;
  scopes?: string[];
  /** The run command's grant: what a GrantExchangeMinter exchanges for this task's tokens. */
  grant?: string;
  /** The execution attempt making the call (only it may record the outcome). */
  owner: string;
  signal?: AbortSignal;
  deadline?: Date;
  /** Retries of read-only calls draw from this; without it each call may retry `readRetries` times. */
  budget?: RetryBudget;
}

export interface ToolGatewayOptions {
  servers: Record<string, McpServerSpec>;
  ledger: EffectLedger;
  clientName?: string;
  tokens?: ToolTokenMinter;
  defaultRequestTimeoutMs?: number;
  defaultMaxConcurrency?: number;
  readRetries?: number;
  retryBaseMs?: number;
  stderr?: 'inherit' | 'ignore' | 'pipe';
  /** How long a server judged to speak only an older MCP revision is trusted to before it is probed again. */
  legacyRecheckMs?: number;
  /** Record tool arguments and results on the execute_tool span (off: they may hold personal data). */
  tracePayloads?: boolean;
  /** Observes every finished call (metrics). */
  onCall?: (e: { tool: string; outcome: 'ok' | 'error' | 'unknown' | 'replayed' | 'failed'; ms: number }) => void;
  /** The reconcile loop over this gateway's unknown outcomes (interval, batch, metrics); runs from `start()`. */
  reconcile?: ReconcilerOptions;
}

type Failure = 'aborted' | 'timeout' | 'connection' | 'refused';

/** Tasks whose grant a gateway keeps for its reconcile loop. */
const MAX_GRANTS_KEPT = 4096;
const grantKey = (tenant: string, taskId: string) => `${tenant}\n${taskId}`;

/**
 * Calls MCP tools for agents: namespaced names, cached tool lists, a slot limit per server, the
 * effect ledger around every call, unknown outcomes for side effects that got no answer, retries
 * with backoff for calls that are safe to repeat, and reconciliation of unknowns by idempotency key.
 * Its caller sees `call(intent) → observation`, `reconcile(key)` and `awaitOutcome(key)`; the
 * gateway owns the loop (`start()` … `close()`) that settles the unknown outcomes of its servers
 * that have a reconcile tool, several gateways sharing one ledger each covering their own.
 */
export class ToolGateway {
  private readonly connections = new Map<string, McpSessionPool>();
  private readonly slots = new Map<string, SlotSupplier>();
  private readonly ledger: EffectLedger;
  private readonly clientName: string;
  private readonly reconciler: Reconciler;
  /** Whether `start()` runs the loop: some server has a reconcile tool. */
  private readonly reconciles: boolean;
  /** The grant of each task that called here lately (the reconcile loop mints with its task's). */
  private readonly grants = new Map<string, string>();
  private lastGrant: string | undefined;

  constructor(private readonly opts: ToolGatewayOptions) {
    this.ledger = opts.ledger;
    const clientName = (this.clientName = opts.clientName ?? 'agent-mesh-worker');
    for (const [name, spec] of Object.entries(opts.servers)) {
      const { tokens } = opts;
      // A server that wants tokens also wants one on every HTTP request: a connection token opens the session.
      const audience = spec.transport === 'http' ? spec.tokenAudience : undefined;
      // The grant of the task that called last opens the session (a session is shared by the agent's tasks).
      const bearer = audience && tokens ? () => tokens.mintConnection({ audience, subject: clientName, grant: this.lastGrant }) : undefined;
      const maxConcurrency = spec.maxConcurrency ?? opts.defaultMaxConcurrency ?? 16;
      this.connections.set(
        name,
        new McpSessionPool(name, spec, {
          clientName,
          stderr: opts.stderr,
          // Sockets kept for reuse: one per call in flight, and one per session for its notification stream.
          idleSockets: maxConcurrency + (spec.transport === 'http' ? (spec.sessions ?? 1) : 1),
          ...(opts.legacyRecheckMs !== undefined ? { legacyRecheckMs: opts.legacyRecheckMs } : {}),
          ...(bearer ? { bearer } : {}),
        }),
      );
      this.slots.set(name, new SemaphoreSlotSupplier(maxConcurrency));
    }
    const reconcilable = Object.entries(opts.servers)
      .filter(([, spec]) => spec.reconcileTool)
      .map(([name]) => `mcp__${name}__`);
    this.reconciles = reconcilable.length > 0;
    this.reconciler = new Reconciler(this.ledger, (key) => this.settle(key), reconcilable, opts.reconcile);
  }

  /** Starts the reconcile loop (when a server has a reconcile tool); `close()` stops it. */
  start(): void {
    if (this.reconciles) this.reconciler.start();
  }

  /** One pass of the reconcile loop now (operators, tests); returns how many outcomes it settled. */
  reconcileOnce(): Promise<number> {
    return this.reconciler.runOnce();
  }

  /**
   * Waits until the unknown outcome under `key` is settled (by this gateway's loop, or any other
   * process's); its observation, or undefined when the call was never applied. Rejects when
   * `signal` aborts.
   */
  awaitOutcome(key: string, signal: AbortSignal): Promise<ToolObservation | undefined> {
    return this.reconciler.waitFor(key, signal);
  }

  /** The sessions of a server (for operations and tests). */
  connection(server: string): McpSessionPool {
    const c = this.connections.get(server);
    if (!c) throw new MeshError('TOOL_NOT_FOUND', `no MCP server "${server}" is configured`);
    return c;
  }

  /** The concurrency limit of a server. */
  slotsOf(server: string): SlotSupplier {
    this.connection(server);
    return this.slots.get(server)!;
  }

  /** All tools of all servers, namespaced `mcp__{server}__{tool}`. */
  async listTools(): Promise<ToolInfo[]> {
    const out: ToolInfo[] = [];
    for (const [server, conn] of this.connections) {
      for (const t of (await conn.tools()).values()) out.push({ ...t, name: `mcp__${server}__${t.name}` });
    }
    return out;
  }

  /** Calls a tool in an `execute_tool {tool}` span (GenAI semantic conventions). */
  async call(intent: ToolIntent, scope: ToolCallScope): Promise<ToolObservation> {
    if (scope.grant) this.noteGrant(scope.tenant, scope.taskId, scope.grant);
    const hash = argsHash(intent.args ?? {});
    const key = idempotencyKey(scope.tenant, scope.taskId, intent.tool, hash);
    const attributes = {
      [SpanAttr.genAiOperation]: 'execute_tool',
      [SpanAttr.genAiToolName]: intent.tool,
      [SpanAttr.genAiToolCallId]: key,
      [SpanAttr.idempotencyKey]: key,
      [SpanAttr.tenant]: scope.tenant,
      [SpanAttr.taskId]: scope.taskId,
      [SpanAttr.executionId]: scope.executionId,
      ...(this.opts.tracePayloads ? { 'gen_ai.tool.call.arguments': JSON.stringify(intent.args ?? {}) } : {}),
    };
    return withSpan(`execute_tool ${intent.tool}`, { attributes }, async (span) => {
      const obs = await this.execute(intent, scope, hash, key);
      span.setAttribute(SpanAttr.outcome, obs.status);
      if (obs.status !== 'unknown') span.setAttribute('mesh.replayed', obs.replayed);
      if (this.opts.tracePayloads && obs.status !== 'unknown')
        span.setAttribute('gen_ai.tool.call.result', JSON.stringify(obs.data ?? obs.text ?? null));
      return obs;
    });
  }

  /** `hash` and `key`: the call's arguments hash and idempotency key, as `call` made them for its span. */
  private async execute(intent: ToolIntent, scope: ToolCallScope, hash: string, key: string): Promise<ToolObservation> {
    const started = Date.now();
    const { server, tool, info } = await this.resolve(intent.tool, scope);
    const args = intent.args ?? {};
    const sideEffect = !info.safeToRepeat;
    const spec = this.connection(server).spec;
    const timeoutMs = spec.requestTimeoutMs ?? this.opts.defaultRequestTimeoutMs ?? 30000;
    const effect = {
      key,
      tenant: scope.tenant,
      taskId: scope.taskId,
      executionId: scope.executionId,
      tool: intent.tool,
      argsHash: hash,
      args,
      sideEffect,
      owner: scope.owner,
    };

    for (;;) {
      const claim = await this.ledger.claim(effect, timeoutMs + 5000);
      if (claim.kind === 'recorded') {
        this.opts.onCall?.({
          tool: intent.tool,
          outcome: claim.entry.state === 'unknown' ? 'unknown' : 'replayed',
          ms: Date.now() - started,
        });
        return observationOf(claim.entry, true);
      }
      if (claim.kind === 'busy') {
        // The same call of the same attempt is in flight (the handler issued it twice at once): wait for it.
        await sleepOrThrow(100, scope.signal);
        continue;
      }
      break;
    }

    let attempt = 0;
    for (;;) {
      const deadlineAt = scope.deadline?.getTime();
      // An invalid Date (NaN) is no deadline; a far one only bounds the call by its own timeout.
      const remaining = deadlineAt !== undefined && Number.isFinite(deadlineAt) ? deadlineAt - Date.now() : Infinity;
      try {
        if (remaining <= 0) throw new MeshError('DEADLINE_EXCEEDED', `deadline passed before calling ${intent.tool}`);
        const meta: JsonObject = {
          [ToolMeta.idempotencyKey]: key,
          [ToolMeta.tenant]: scope.tenant,
          [ToolMeta.subject]: scope.subject,
          [ToolMeta.taskId]: scope.taskId,
        };
        await this.addToken(meta, server, spec, scope);
        const result = await this.withSlot(server, scope.signal, () =>
          this.connection(server).callTool(tool, args, meta, {
            signal: scope.signal,
            timeoutMs: clampTimerMs(Math.min(timeoutMs, remaining)),
          }),
        );
        const recorded = recordedOf(result);
        const state = result.isError ? 'error' : 'ok';
        await this.ledger.complete(key, scope.owner, state, recorded);
        this.opts.onCall?.({ tool: intent.tool, outcome: state, ms: Date.now() - started });
        return {
          status: state,
          tool: intent.tool,
          idempotencyKey: key,
          text: recorded.text,
          ...(recorded.data ? { data: recorded.data } : {}),
          replayed: false,
        };
      } catch (err) {
        if (
          err instanceof MeshError &&
          (err.code === 'DEADLINE_EXCEEDED' || err.code === 'CONFIG_INVALID' || err.code === 'CANCELLED' || err.code === 'UNAUTHENTICATED')
        ) {
          // Nothing was sent: the call may be made again later.
          await this.ledger.release(key, scope.owner);
          throw err;
        }
        const failure = classify(err, scope.signal);
        if (sideEffect && failure !== 'refused') {
          // The request may have reached the server: its effect is unknown. Never retry it blindly.
          const reason = `${failure}: ${errorText(err)}`;
          await this.ledger.markUnknown(key, scope.owner, reason);
          this.opts.onCall?.({ tool: intent.tool, outcome: 'unknown', ms: Date.now() - started });
          return { status: 'unknown', tool: intent.tool, idempotencyKey: key, reason };
        }
        if (failure === 'refused') {
          // The server answered with a protocol error: that is the outcome of this call.
          const recorded = { text: errorText(err) };
          await this.ledger.complete(key, scope.owner, 'error', recorded);
          this.opts.onCall?.({ tool: intent.tool, outcome: 'error', ms: Date.now() - started });
          return { status: 'error', tool: intent.tool, idempotencyKey: key, text: recorded.text, replayed: false };
        }
        const canRetry =
          failure !== 'aborted' &&
          attempt < (this.opts.readRetries ?? 3) &&
          (scope.budget ? scope.budget.take() : true) &&
          (!scope.deadline || scope.deadline.getTime() - Date.now() > this.backoff(attempt));
        if (!canRetry) {
          await this.ledger.release(key, scope.owner);
          this.opts.onCall?.({ tool: intent.tool, outcome: 'failed', ms: Date.now() - started });
          if (failure === 'aborted') throw scope.signal ? abortError(scope.signal) : new MeshError('CANCELLED', 'aborted');
          throw new MeshError('TOOL_UNAVAILABLE', `${intent.tool} failed after ${attempt + 1} attempt(s): ${errorText(err)}`, {
            cause: err,
            retryable: true,
          });
        }
        await sleepOrThrow(this.backoff(attempt), scope.signal).catch(async (abortErr: unknown) => {
          await this.ledger.release(key, scope.owner);
          throw abortErr;
        });
        attempt++;
      }
    }
  }

  /**
   * Resolves an unknown outcome through the server's reconcile tool. Returns the settled observation,
   * or undefined when it stays unknown (no reconcile tool, server unreachable).
   */
  async reconcile(key: string): Promise<ToolObservation | undefined> {
    return (await this.settle(key))?.observation;
  }

  /** `reconcile`, saying whether this attempt is the one that settled it (the loop's metric). */
  private async settle(key: string): Promise<{ observation: ToolObservation; settledHere: boolean } | undefined> {
    const entry = await this.ledger.get(key);
    if (!entry) throw new MeshError('NOT_FOUND', `no effect recorded under ${key}`);
    if (entry.state !== 'unknown') return { observation: observationOf(entry, true), settledHere: false };
    const parsed = parseToolName(entry.tool);
    const spec = parsed && this.connections.get(parsed.server)?.spec;
    if (!parsed || !spec?.reconcileTool) return undefined;
    let result: ToolCallResult;
    try {
      const meta: JsonObject = { [ToolMeta.tenant]: entry.tenant, [ToolMeta.taskId]: entry.taskId };
      // The reconciler reads the tenant's receipt for the platform: the worker is the subject.
      await this.addToken(meta, parsed.server, spec, {
        tenant: entry.tenant,
        subject: this.clientName,
        taskId: entry.taskId,
        grant: this.grants.get(grantKey(entry.tenant, entry.taskId)),
      });
      result = await this.withSlot(parsed.server, undefined, () =>
        this.connection(parsed.server).callTool(spec.reconcileTool!, { idempotency_key: key }, meta, {
          timeoutMs: spec.requestTimeoutMs ?? this.opts.defaultRequestTimeoutMs ?? 30000,
        }),
      );
    } catch {
      return undefined;
    }
    const answer = result.structuredContent as { status?: string; result?: JsonObject } | undefined;
    if (result.isError || !answer) return undefined;
    let settledHere: boolean;
    if (answer.status === 'applied') {
      const recorded: RecordedResult = { text: JSON.stringify(answer.result ?? {}), ...(answer.result ? { data: answer.result } : {}) };
      settledHere = await this.ledger.resolve(key, 'ok', recorded);
    } else if (answer.status === 'not_found') {
      settledHere = await this.ledger.resolve(key, 'absent');
    } else {
      return undefined;
    }
    const settled = await this.ledger.get(key);
    return settled ? { observation: observationOf(settled, true), settledHere } : undefined;
  }

  /** Stops the reconcile loop (waiting for a pass under way), then closes the server connections. */
  async close(): Promise<void> {
    await this.reconciler.stop();
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }

  /**
   * The tool's server and description. Connecting and listing reach no tool, so a listing that
   * failed for a timeout, a lost connection or a 5xx (a slow probe of a busy server, a restart) is
   * tried again with backoff within the read retries and the turn's budget, side-effecting tool or
   * not; a refusal (401/403 and other 4xx) is not.
   */
  private async resolve(name: string, scope: ToolCallScope): Promise<{ server: string; tool: string; info: ToolInfo }> {
    const { signal } = scope;
    const parsed = parseToolName(name);
    if (!parsed || !this.connections.has(parsed.server)) throw new MeshError('TOOL_NOT_FOUND', `unknown tool "${name}"`);
    // Without a minter such a server refuses the connection itself: say why instead of "unavailable".
    if (this.connection(parsed.server).spec.tokenAudience && !this.opts.tokens)
      throw new MeshError('CONFIG_INVALID', `server "${parsed.server}" wants a token but no token minter is configured`);
    let tools: Map<string, ToolInfo>;
    for (let attempt = 0; ; attempt++) {
      try {
        tools = await this.connection(parsed.server).tools();
        break;
      } catch (cause) {
        if (signal?.aborted) throw abortError(signal);
        const canRetry =
          !isRefusal(cause) &&
          attempt < (this.opts.readRetries ?? 3) &&
          (scope.budget ? scope.budget.take() : true) &&
          (!scope.deadline || scope.deadline.getTime() - Date.now() > this.backoff(attempt));
        if (!canRetry)
          throw new MeshError('TOOL_UNAVAILABLE', `MCP server "${parsed.server}" is unavailable: ${errorText(cause)}`, {
            cause,
            retryable: true,
          });
        await sleepOrThrow(this.backoff(attempt), signal);
      }
    }
    const info = tools.get(parsed.tool);
    if (!info) throw new MeshError('TOOL_NOT_FOUND', `server "${parsed.server}" has no tool "${parsed.tool}"`);
    return { ...parsed, info };
  }

  /** Adds the call token (`_meta["mesh/token"]`) a server with `tokenAudience` wants. */
  private async addToken(
    meta: JsonObject,
    server: string,
    spec: McpServerSpec,
    who: { tenant: string; subject: string; taskId: string; act?: ActorClaim; scopes?: string[]; grant?: string },
  ): Promise<void> {
    if (!spec.tokenAudience) return;
    if (!this.opts.tokens) throw new MeshError('CONFIG_INVALID', `server "${server}" wants a token but no token minter is configured`);
    const { tenant, subject, taskId, act, scopes, grant } = who;
    try {
      meta[ToolMeta.token] = await this.opts.tokens.mint({
        audience: spec.tokenAudience,
        tenant,
        subject,
        taskId,
        ...(act ? { act } : {}),
        ...(scopes ? { scopes } : {}),
        ...(grant ? { grant } : {}),
      });
    } catch (cause) {
      // Nothing was sent: the call fails without an unknown outcome (see execute).
      if (cause instanceof MeshError && cause.code === 'UNAUTHENTICATED') throw cause;
      throw new MeshError('UNAUTHENTICATED', `no token for server "${server}": ${errorText(cause)}`, {
        cause,
        retryable: cause instanceof MeshError && cause.retryable,
      });
    }
  }

  /** Remembers a task's grant (bounded: the oldest tasks' go first). */
  private noteGrant(tenant: string, taskId: string, grant: string): void {
    const key = grantKey(tenant, taskId);
    this.grants.delete(key);
    this.grants.set(key, grant);
    if (this.grants.size > MAX_GRANTS_KEPT) this.grants.delete(this.grants.keys().next().value!);
    this.lastGrant = grant;
  }

  private async withSlot<T>(server: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const slot = await this.slots.get(server)!.reserve(signal);
    try {
      return await fn();
    } finally {
      slot.release();
    }
  }

  private backoff(attempt: number): number {
    const base = this.opts.retryBaseMs ?? 100;
    return base * 2 ** attempt + Math.floor(Math.random() * base);
  }
}

function observationOf(entry: EffectEntry, replayed: boolean): ToolObservation {
  if (entry.state === 'unknown' || entry.state === 'pending' || entry.state === 'absent') {
    return { status: 'unknown', tool: entry.tool, idempotencyKey: entry.key, reason: entry.reason ?? entry.state };
  }
  return {
    status: entry.state,
    tool: entry.tool,
    idempotencyKey: entry.key,
    text: entry.result?.text ?? '',
    ...(entry.result?.data ? { data: entry.result.data } : {}),
    replayed,
  };
}

function recordedOf(result: ToolCallResult): RecordedResult {
  const text = (result.content ?? [])
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
  return result.structuredContent ? { text, data: result.structuredContent as JsonObject } : { text };
}

function classify(err: unknown, signal?: AbortSignal): Failure {
  if (signal?.aborted) return 'aborted';
  const code = (err as { code?: unknown }).code;
  // The 2.x SDK reports its own timeout as REQUEST_TIMEOUT; -32001 is the JSON-RPC code older peers use.
  if (code === -32001 || code === 'REQUEST_TIMEOUT') return 'timeout';
  // Invalid request/params, method not found, parse error: the server refused the request itself.
  if (code === -32600 || code === -32601 || code === -32602 || code === -32700) return 'refused';
  return 'connection';
}

/** An HTTP answer that will not change by asking again (401, 403, other 4xx); 408 and 429 may. */
function isRefusal(err: unknown): boolean {
  const status = err instanceof SdkHttpError ? err.status : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // An HTTP refusal (401 on the probe, say) carries the server's own words in the body.
  const body = (err as { data?: { text?: unknown } }).data?.text;
  return typeof body === 'string' && body && !err.message.includes(body) ? `${err.message}: ${body.slice(0, 500)}` : err.message;
}

/** Waits like `sleep`, but an abort ends the wait with the scope's abort error. */
async function sleepOrThrow(ms: number, signal?: AbortSignal): Promise<void> {
  await sleep(ms, signal);
  if (signal?.aborted) throw abortError(signal);
}
