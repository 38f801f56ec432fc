import { randomUUID } from 'node:crypto';
import {
  Outcomes,
  type AgentContext,
  type DelegationOutcome,
  type AgentDefinition,
  type AgentMessage,
  type AgentTask,
  type ArtifactInput,
  type ToolIntent,
  type ToolObservation,
  type TurnOutcome,
} from '@mesh/agent-sdk';
import {
  actFor,
  anyTransient,
  Envelopes,
  FIRST_TURN,
  MeshError,
  sleep,
  TaskStates,
  type MeshErrorCode,
  type Envelope,
  type Identity,
  type JsonObject,
  type TaskCancelCommand,
  type TaskEvent,
  type TaskRunCommand,
  type TaskState,
  type TopicNames,
  type DelegationRequest,
  type TurnUsage,
} from '@mesh/contract';
import { isTransientKafkaError } from '@mesh/bus';
import { isTransientPostgresError } from '@mesh/database';
import { RetryBudget, type ToolCallScope } from '@mesh/tool-gateway';
import { trace } from '@opentelemetry/api';
import { linkFromHeaders, silentLogger, SpanAttr, withSpan, type Logger } from '@mesh/telemetry';
import { delegationOutcomeOf, fromWireMessage, toWireArtifact, toWireMessage, toWireParts, wireStateOf } from './a2a-wire.js';
import type { ExecutionLedger } from './execution-ledger.js';
import { delegatedOutcome } from './delegated-outcome.js';
import { LeaseKeeper, LeaseRenewals } from './lease-keeper.js';
import { TurnSignal } from './turn-signal.js';

/**
 * Thrown by a handler that cannot take the turn now and has not started it anywhere (a remote agent
 * answered 429/503 or cannot be reached): the runner gives the execution up without reporting and
 * the bus delivers the command again, like a database outage. Never the task's outcome.
 */
export class TurnUnavailable extends MeshError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('UNAVAILABLE', message, { retryable: true, ...options });
    this.name = 'TurnUnavailable';
  }
}

/** The ledgers are in Postgres and events go to Kafka: an outage of either is not the turn's failure. */
export const isTransientInfrastructure = anyTransient(
  isTransientKafkaError,
  isTransientPostgresError,
  (err) => err instanceof TurnUnavailable,
);

/** Where events go (a BusProducer satisfies it). */
export interface EventSink {
  send(topic: string, key: string, envelope: Envelope): Promise<void>;
}

/** What the runner needs from the tool gateway (which settles unknown outcomes in its own loop). */
export interface ToolCaller {
  call(intent: ToolIntent, scope: ToolCallScope): Promise<ToolObservation>;
  /** Waits until an unknown outcome is settled: its observation, or undefined when never applied. */
  awaitOutcome(key: string, signal: AbortSignal): Promise<ToolObservation | undefined>;
}

/** The side-effecting calls a turn made, as the effect ledger recorded them (an EffectLedger satisfies it). */
export interface SideEffectReader {
  sideEffectsOf(tenant: string, taskId: string, executionId: string): Promise<Array<{ key: string; tool: string; state: string }>>;
}

export interface TurnRunnerOptions {
  agent: AgentDefinition;
  ledger: ExecutionLedger;
  tools: ToolCaller;
  /** Read when a turn ends without success, to say which side effects it made anyway. */
  effects: SideEffectReader;
  sink: EventSink;
  topics: TopicNames;
  workerId: string;
  leaseMs: number;
  /** How long a turn waits for an unknown tool outcome to be reconciled before the handler sees `unknown`. */
  unknownWaitMs: number;
  /** Retries of read-only tool calls per turn. */
  retryBudget: number;
  /** The service's logger (lines carry `src: turn-runner` and the agent id). */
  logger?: Logger;
  /** Observes finished turns and dedup hits (metrics). */
  observe?: { turnFinished(state: string): void; dedupHit(): void };
}

/** Seqs of one attempt start at attempt × this, so a takeover's events sort after the dead owner's. */
const SEQ_PER_ATTEMPT = 1_000_000;

/**
 * Runs one turn of a task exactly once in effect: claims the execution id, runs the handler with
 * an AbortSignal (cancel, deadline, lost lease), emits status and artifact events with increasing
 * seq, and records the final events so a redelivered command re-emits them instead of running again.
 */
export class TurnRunner {
  private readonly log: Logger;
  /** One renewal loop for the leases of all the turns in flight here. */
  private readonly renewals: LeaseRenewals;

  constructor(private readonly o: TurnRunnerOptions) {
    this.log = (o.logger ?? silentLogger).child({ src: 'turn-runner', agent: o.agent.id });
    this.renewals = new LeaseRenewals(Math.max(50, Math.floor(o.leaseMs / 3)));
  }

  /**
   * Runs `cmd`; `cancel` aborts when a task.cancel arrives for this task, `revoked` when this process
   * no longer owns the command (the turn stops, reports nothing, and its lease is released).
   */
  async run(cmd: TaskRunCommand, cancel: AbortSignal, revoked: AbortSignal = new AbortController().signal): Promise<void> {
    const id = cmd.identity;
    const input = fromWireMessage(cmd.body.message);
    // The children's outcomes, on a turn resumed after delegating (read once: span and task).
    const delegation = delegationOutcomeOf(cmd.body.message);
    const owner = `${this.o.workerId}/${randomUUID().slice(0, 8)}`;
    const claimed = await this.claim(cmd, input, owner);
    if (!claimed) return;
    return withSpan(`invoke_agent ${this.o.agent.id}`, this.spanOptions(cmd, claimed.attempt, delegation !== undefined), async () => {
      const turn = new TurnEmitter(this, id, (claimed.attempt - 1) * SEQ_PER_ATTEMPT);
      // The lease is held from the claim until the turn is finished or given up — the wait for its
      // side effects' outcomes included.
      const lease = new LeaseKeeper({
        ledger: this.o.ledger,
        executionId: id.executionId,
        owner,
        leaseMs: this.o.leaseMs,
        renewals: this.renewals,
      });
      const stop = new TurnSignal(lease);
      // One budget for the turn's retries, never more than the task tree has left (docs/agents.md, "Delegation").
      const budget = new RetryBudget(Math.min(this.o.retryBudget, id.retryBudget ?? Number.POSITIVE_INFINITY));
      const usage = () => ({ attempt: claimed.attempt, retries: budget.used });
      const finish = (outcome: TurnOutcome) => this.finish(turn, owner, outcome, lease, usage());
      // `return await` below: the lease is renewed until finish (and its wait) has ended.
      try {
        const refused = this.notStarted(cmd, claimed.attempt, cancel.aborted || claimed.canceled);
        if (refused) return await finish(refused);
        const unwatch = stop.watch(cancel, revoked, id.deadlineUnixMs);
        const { outcome, unavailable } = await this.runHandler(cmd, input, owner, turn, {
          signal: stop.signal,
          unwatch,
          budget,
          delegation,
        });
        if (lease.isLost) {
          this.log.debug({ executionId: id.executionId }, 'lease lost or command revoked during the turn; not reporting');
          return await this.abandon(lease, owner, 'abandoned', revoked.aborted);
        }
        if (unavailable !== undefined) {
          // Failing the task for a database blip would be a wrong business fact. Give the execution up
          // and throw: the bus delivers the command again for as long as the outage lasts (transient
          // failures do not count towards its dead-letter limit), and the next attempt runs the turn
          // with the effect ledger keeping every side effect single.
          this.log.warn({ error: String(unavailable) }, 'a dependency was unavailable during the turn; it runs again');
          await this.abandon(lease, owner, 'retried', true);
          throw unavailable;
        }
        await finish(outcome);
      } finally {
        lease.stop();
      }
    });
  }

  /**
   * Claims the execution, waiting while another owner holds it; undefined when it had finished
   * already (its final events are sent again).
   */
  private async claim(
    cmd: TaskRunCommand,
    input: AgentMessage,
    owner: string,
  ): Promise<{ attempt: number; canceled: boolean } | undefined> {
    const id = cmd.identity;
    const claim = {
      executionId: id.executionId,
      tenant: id.tenant,
      agentId: this.o.agent.id,
      taskId: id.taskId,
      contextId: id.contextId,
      turn: cmd.body.turn,
      input,
      ...(id.traceparent ? { traceparent: id.traceparent } : {}),
    };
    for (;;) {
      const c = await this.o.ledger.claim(claim, owner, this.o.leaseMs);
      if (c.kind === 'finished') {
        this.log.debug({ executionId: id.executionId }, 'execution already finished: re-emitting its final events');
        this.o.observe?.dedupHit();
        trace.getActiveSpan()?.addEvent('execution already finished', { [SpanAttr.executionId]: id.executionId });
        for (const e of c.events) await this.send(e);
        return undefined;
      }
      if (c.kind === 'claimed') return { attempt: c.attempt, canceled: c.canceled };
      // Someone else runs it now: wait for it to finish, or for its lease to expire and take over.
      await sleep(Math.min(Math.max(c.leaseRemainingMs + 20, 50), 1000));
    }
  }

  /**
   * A first attempt continues the request's trace (a delegated child's too: its command carries
   * the caller's trace context); a takeover after a crash or lost lease, and a turn resumed with
   * its children's outcomes, start their own trace linked to the submit span, so the original
   * trace is not stretched over hours.
   */
  private spanOptions(cmd: TaskRunCommand, attempt: number, resumedWithResults: boolean) {
    const id = cmd.identity;
    const resumed = attempt > 1 || resumedWithResults;
    return {
      root: resumed,
      links: resumed && id.traceparent ? linkFromHeaders({ traceparent: id.traceparent }) : [],
      attributes: {
        [SpanAttr.genAiOperation]: 'invoke_agent',
        [SpanAttr.genAiAgentId]: this.o.agent.id,
        [SpanAttr.agentId]: this.o.agent.id,
        [SpanAttr.tenant]: id.tenant,
        [SpanAttr.taskId]: id.taskId,
        [SpanAttr.contextId]: id.contextId,
        [SpanAttr.executionId]: id.executionId,
        'mesh.turn': cmd.body.turn,
        'mesh.attempt': attempt,
        ...(id.parentTaskId ? { 'mesh.parent_task_id': id.parentTaskId } : {}),
        ...(id.rootTaskId ? { 'mesh.root_task_id': id.rootTaskId } : {}),
      },
    };
  }

  /** The outcome of a turn that must not start, or undefined when it may. */
  private notStarted(cmd: TaskRunCommand, attempt: number, canceled: boolean): TurnOutcome | undefined {
    const id = cmd.identity;
    if (id.deadlineUnixMs !== undefined && id.deadlineUnixMs <= Date.now()) {
      return Outcomes.failed('The deadline passed before the task was started.');
    }
    // The dispatcher fails a turn nobody started by then; starting it now would contradict that.
    // A takeover (attempt > 1) continues a turn that was started.
    if (attempt === 1 && id.startByUnixMs !== undefined && id.startByUnixMs <= Date.now()) {
      return Outcomes.failed('No worker started the task by its start-by time; it is not started now.');
    }
    // A cancel read here, or recorded by any worker before this claim (see ExecutionLedger).
    if (canceled) return Outcomes.canceled('Canceled before it started.');
    return undefined;
  }

  /**
   * Runs the handler under `signal`, then stops following the turn's abort sources (`unwatch`) before
   * the outcome is settled. `unavailable` is set when a dependency went away mid-turn (a Postgres
   * restart): not the task's outcome. A handler returning after the abort has not finished.
   */
  private async runHandler(
    cmd: TaskRunCommand,
    input: AgentMessage,
    owner: string,
    turn: TurnEmitter,
    {
      signal,
      unwatch,
      budget,
      delegation,
    }: { signal: AbortSignal; unwatch: () => void; budget: RetryBudget; delegation: DelegationOutcome | undefined },
  ): Promise<{ outcome: TurnOutcome; unavailable?: unknown }> {
    const id = cmd.identity;
    let outcome: TurnOutcome;
    let unavailable: unknown;
    try {
      if (signal.aborted) throw signal.reason;
      turn.emit(turn.status(TaskStates.working, undefined, false));
      const task: AgentTask = {
        agentId: this.o.agent.id,
        tenant: id.tenant,
        taskId: id.taskId,
        contextId: id.contextId,
        turn: cmd.body.turn,
        subject: id.subject,
        actor: id.actor,
        message: input,
        parts: input.parts,
        // A first turn has no history: skip the query on the hot path.
        history: cmd.body.turn > FIRST_TURN ? await this.o.ledger.history(id.tenant, id.taskId, cmd.body.turn) : [],
        ...(validDate(id.deadlineUnixMs) ? { deadline: new Date(id.deadlineUnixMs) } : {}),
        ...(id.parentTaskId ? { parentTaskId: id.parentTaskId } : {}),
        ...(id.scopes ? { scopes: [...id.scopes] } : {}),
        ...(delegation ? { delegation } : {}),
        signal,
      };
      const scope: ToolCallScope = {
        tenant: id.tenant,
        taskId: id.taskId,
        executionId: id.executionId,
        subject: id.subject,
        // RFC 8693: this agent acts, for the task's actor chain (the caller's client innermost).
        act: actFor(`agent:${this.o.agent.id}`, id.act ?? { sub: id.actor }),
        ...(id.scopes ? { scopes: id.scopes } : {}),
        ...(cmd.grant ? { grant: cmd.grant } : {}),
        owner,
        signal,
        ...(task.deadline ? { deadline: task.deadline } : {}),
        budget,
      };
      const ctx = this.context(turn, scope, signal);
      // Revoked, canceled or past the deadline while the history was read: the handler never starts.
      if (signal.aborted) throw signal.reason;
      outcome = await raceAbort(this.o.agent.handler(task, ctx), signal);
    } catch (err) {
      if (!signal.aborted && isTransientInfrastructure(err)) unavailable = err;
      outcome = this.outcomeOfError(err, signal);
    } finally {
      unwatch();
    }
    if (signal.aborted && outcome.state !== 'canceled' && outcome.state !== 'failed') outcome = this.outcomeOfError(signal.reason, signal);
    return unavailable === undefined ? { outcome } : { outcome, unavailable };
  }

  /**
   * Ends this attempt without reporting: stops renewing first (a renewal must not take the lease
   * back), then releases the lease for the next owner when `release`.
   */
  private async abandon(lease: LeaseKeeper, owner: string, spanOutcome: 'abandoned' | 'retried', release: boolean): Promise<void> {
    trace.getActiveSpan()?.setAttribute(SpanAttr.outcome, spanOutcome);
    lease.stop();
    if (release) await this.o.ledger.abandon(lease.executionId, owner).catch(() => undefined);
  }

  /**
   * Records the turn's outcome and sends its final status, unless this attempt lost the execution
   * first (its new owner reports it).
   */
  private async finish(turn: TurnEmitter, owner: string, outcome: TurnOutcome, lease: LeaseKeeper, usage: TurnUsage): Promise<void> {
    const id = turn.id;
    const reported =
      outcome.state === 'completed' ||
      outcome.state === 'input-required' ||
      outcome.state === 'auth-required' ||
      outcome.state === 'delegated'
        ? outcome
        : await this.withSideEffects(id, outcome, lease.lost);
    const delegation: DelegationRequest | undefined =
      reported.state === 'delegated'
        ? {
            join: reported.join,
            ...(reported.timeoutMs !== undefined ? { timeoutMs: reported.timeoutMs } : {}),
            children: reported.children.map((c) => ({
              step: c.step,
              taskId: c.taskId,
              ...(c.agent !== undefined ? { agentId: c.agent } : { skill: c.skill! }),
              parts: toWireParts(c.parts),
              ...(c.scopes ? { scopes: c.scopes } : {}),
            })),
          }
        : undefined;
    const status = turn.status(wireStateOf(reported.state), reported.message, true, { usage, ...(delegation ? { delegation } : {}) });
    const events = [...turn.artifacts, status];
    // Progress and artifacts were sent without waiting (the producer keeps their order). The outcome
    // is recorded while their acknowledgement is awaited, not after it (one round trip less per
    // turn): the recorded final events hold the artifacts, so if a send failed, the error below
    // makes the bus deliver the command again, and the redelivery re-emits artifacts and final
    // status from the ledger. The final status goes only after both, so it is always the last event.
    const [, recorded] = await Promise.all([
      turn.flush(),
      this.o.ledger.finish(id.executionId, owner, { state: outcome.state, reply: reported.message, events }),
    ]);
    if (!recorded) {
      this.log.debug({ executionId: id.executionId }, 'lost the execution before finishing; its new owner reports it');
      return;
    }
    trace.getActiveSpan()?.setAttribute(SpanAttr.outcome, outcome.state);
    this.o.observe?.turnFinished(outcome.state);
    await this.send(status);
  }

  /**
   * A turn that ends without success (canceled, failed, rejected) may still have made side effects
   * — a refund that went through before the cancel reached the call. Its final status says so:
   * each side-effecting call of the turn that was applied, or whose outcome is still unknown after
   * the reconciler had up to the unknown-wait budget to settle it, in the message text and in
   * `metadata["mesh/side_effects"]` (`{tool, idempotency_key, outcome: applied | unknown}`). The
   * turn's lease is still renewed while it waits, so the execution is not taken over meanwhile.
   */
  private async withSideEffects(id: Identity, outcome: TurnOutcome, lost: AbortSignal): Promise<TurnOutcome> {
    const made = await this.o.effects.sideEffectsOf(id.tenant, id.taskId, id.executionId);
    if (made.length === 0) return outcome;
    // A timer of our own (AbortSignal.timeout's does not keep the process alive); the wait also
    // ends when this attempt loses the execution (its new owner reports the turn).
    const waitEnd = new AbortController();
    const timer = setTimeout(() => waitEnd.abort(new MeshError('DEADLINE_EXCEEDED', 'still unknown')), this.o.unknownWaitMs);
    const wait = AbortSignal.any([waitEnd.signal, lost]);
    /** applied, unknown, or undefined when it did not happen (error, reconciled as absent). */
    const outcomeOf = async (e: { key: string; state: string }): Promise<'applied' | 'unknown' | undefined> => {
      if (e.state === 'ok') return 'applied';
      if (e.state !== 'unknown' && e.state !== 'pending') return undefined;
      return this.o.tools.awaitOutcome(e.key, wait).then(
        (obs) => (obs?.status === 'ok' ? 'applied' : undefined),
        () => 'unknown' as const, // still unknown when the wait ended
      );
    };
    const report = await Promise.all(
      made.map(async (e) => {
        const o = await outcomeOf(e);
        return o && { tool: e.tool, idempotency_key: e.key, outcome: o };
      }),
    );
    clearTimeout(timer);
    const effects = report.filter((r) => r !== undefined);
    if (effects.length === 0 || !outcome.message) return outcome;
    const text = `Side effects the agent made before the task ended: ${effects.map((e) => `${e.tool} (${e.outcome})`).join(', ')}.`;
    return {
      ...outcome,
      message: {
        ...outcome.message,
        parts: [...outcome.message.parts, { type: 'text', text }],
        metadata: { ...(outcome.message.metadata ?? {}), 'mesh/side_effects': effects },
      },
    } as TurnOutcome;
  }

  /**
   * Records a cancel so it holds wherever and whenever its run is read: a later claim reports
   * CANCELED without running the turn, and a turn running in another process is aborted at its
   * next lease renewal (this process's own running turn is aborted by AgentWorker at once).
   */
  async recordCancel(cmd: TaskCancelCommand): Promise<void> {
    const id = cmd.identity;
    await this.o.ledger.cancel({
      executionId: id.executionId,
      tenant: id.tenant,
      taskId: id.taskId,
      ...(cmd.body.reason ? { reason: cmd.body.reason } : {}),
    });
  }

  /** @internal used by TurnEmitter */
  async send(e: TaskEvent): Promise<void> {
    await this.o.sink.send(this.o.topics.events(), e.identity.taskId, e);
  }

  private outcomeOfError(err: unknown, signal: AbortSignal): TurnOutcome {
    const reason = signal.aborted ? signal.reason : err;
    const code = (reason as { code?: MeshErrorCode } | undefined)?.code;
    if (code === 'CANCELLED') return Outcomes.canceled('The task was canceled.');
    if (code === 'DEADLINE_EXCEEDED') return Outcomes.failed('The deadline passed before the task finished.');
    const msg = reason instanceof Error ? reason.message : String(reason);
    // A turn given up as unavailable is logged once, where it is given up.
    if (!(reason instanceof TurnUnavailable)) this.log.warn({ error: msg }, 'handler failed');
    return Outcomes.failed(`The agent failed: ${msg}`);
  }

  private context(turn: TurnEmitter, scope: ToolCallScope, signal: AbortSignal): AgentContext {
    return {
      callTool: async (intent) => {
        let obs = await this.o.tools.call(intent, scope);
        if (obs.status !== 'unknown') return obs;
        // Not failed, not retried blindly: wait for the reconciler to settle it by its key. One wait
        // budget per call: a re-made call whose outcome is unknown again waits within the same budget
        // (handing that second unknown to the handler at once failed tasks whose refund never happened).
        const wait = AbortSignal.any([signal, AbortSignal.timeout(this.o.unknownWaitMs)]);
        for (;;) {
          turn.emit(
            turn.status(
              TaskStates.working,
              {
                role: 'agent',
                parts: [
                  { type: 'text', text: `The outcome of ${intent.tool} is not known yet; it is being reconciled before the task goes on.` },
                ],
                metadata: { 'mesh/tool_outcome': 'unknown', 'mesh/idempotency_key': obs.idempotencyKey, 'mesh/tool': intent.tool },
              },
              false,
            ),
          );
          let settled: ToolObservation | undefined;
          try {
            settled = await this.o.tools.awaitOutcome(obs.idempotencyKey, wait);
          } catch (err) {
            if (signal.aborted) throw err;
            return obs; // still unknown after the wait: the handler decides (and must not claim success)
          }
          if (settled) return settled;
          // Reconciled as never applied: the call is made now (the server's idempotency key still guards it).
          obs = await this.o.tools.call(intent, scope);
          if (obs.status !== 'unknown') return obs;
        }
      },
      progress: async (text) => {
        turn.emit(turn.status(TaskStates.working, { role: 'agent', parts: [{ type: 'text', text }] }, false));
      },
      artifact: async (a) => {
        turn.emit(turn.artifact(a));
      },
      askForInput: (q) => Outcomes.inputRequired(q),
      complete: (t) => Outcomes.completed(t),
      fail: (r) => Outcomes.failed(r),
      reject: (r) => Outcomes.rejected(r),
      delegate: (to, options) => delegatedOutcome(scope.executionId, to, options),
    };
  }
}

/** Builds the events of one attempt with increasing seq, and sends the non-final ones. */
class TurnEmitter {
  readonly artifacts: TaskEvent[] = [];
  private n = 0;
  private pending: Array<Promise<void>> = [];

  constructor(
    private readonly runner: TurnRunner,
    readonly id: Identity,
    private readonly seqBase: number,
  ) {}

  /** Sends without waiting for the acknowledgement; `flush` waits for all of them. */
  emit(e: TaskEvent): void {
    const sent = this.runner.send(e);
    sent.catch(() => undefined); // observed in flush()
    this.pending.push(sent);
  }

  async flush(): Promise<void> {
    const pending = this.pending;
    this.pending = [];
    await Promise.all(pending);
  }

  status(
    state: TaskState,
    message: AgentMessage | undefined,
    final: boolean,
    extra: { usage?: TurnUsage; delegation?: DelegationRequest } = {},
  ): TaskEvent {
    return Envelopes.status(this.id, {
      seq: this.seqBase + this.n++,
      state,
      final,
      ...extra,
      ...(message ? { message: toWireMessage(message, { taskId: this.id.taskId, contextId: this.id.contextId }) } : {}),
    });
  }

  artifact(a: ArtifactInput): TaskEvent {
    const index = this.artifacts.length;
    const e = Envelopes.artifact(this.id, {
      seq: this.seqBase + this.n++,
      artifact: toWireArtifact(a, `${this.id.executionId}:${index}`) as JsonObject,
      lastChunk: true,
    });
    this.artifacts.push(e);
    return e;
  }
}

/** Resolves with `p`, or rejects with the signal's reason as soon as it aborts (a handler ignoring its signal cannot hold the turn). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // `p` runs on; its rejection must not go unobserved (an unhandled rejection ends the process).
    p.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** A deadline a Date can hold (Date ends at ±8.64e15 ms); beyond it the task simply has none the handler can see. */
function validDate(ms: number | undefined): ms is number {
  return ms !== undefined && !Number.isNaN(new Date(ms).getTime());
}
