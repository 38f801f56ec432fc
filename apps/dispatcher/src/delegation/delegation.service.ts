import { Message, TaskState } from '@a2a-js/sdk';
import {
  actFor,
  actorChainDepth,
  childTaskId,
  DELEGATION_RESULTS_KEY,
  MAX_ACTOR_CHAIN,
  narrowScopes,
  PLATFORM_MESSAGE_ID_PREFIX,
  TaskStates,
  type ActorClaim,
  type AgentRecord,
  type ChildOutcome,
  type DelegationResults,
  type TaskEvent,
  type TurnUsage,
} from '@mesh/contract';
import { PeriodicTask } from '@mesh/service';
import { silentLogger, type Logger, type MeshMetrics } from '@mesh/telemetry';
import type { SweepTurn } from '../fleet/sweep-lease.js';
import { isSettled, parseState, stateName } from '../tasks/task-state.js';
import type { DelegationWait, TaskRepository, TaskRow, TaskTransaction, WaitChild } from '../tasks/task.repository.js';
import type { TaskEndings } from '../tasks/task-endings.js';
import type { AcceptInput } from '../tasks/turn-rows.js';
import type { TaskTree } from './task-tree.js';
import { TreeBudget } from './tree-budget.js';
import type { ChangedTask, TaskCommit } from '../tasks/task-commits.js';
import { boundChildResults } from './delegation-results.js';
import { CommandTooLargeError } from '../outbox/outbox-command.js';

/** Where delegated work can go: agents the tenant may use, by id or by skill. */
export interface DelegationTargets {
  /** The agent as `tenant` sees it (own or public; retired included), else undefined. */
  recordFor(agentId: string, tenant: string): AgentRecord | undefined;
  /**
   * An agent `tenant` may use with the skill (id or tag) among those `owner` registered, a healthy
   * one first. A skill is a name any team may claim on its card: asked by skill, the mesh hands a
   * task's data only to agents of the delegating agent's own team (another team's: by id).
   */
  bySkill(skill: string, tenant: string, owner: string): AgentRecord | undefined;
}

export interface DelegationServiceOptions {
  /** Longest wait of a delegating task (it may ask for less). */
  timeoutMs: number;
  /** Kept from the parent's remaining deadline for the parent's own next turn. */
  reserveMs: number;
  /** Retries a task tree may spend across its hops. */
  treeBudget: number;
  /** Pause between sweeps for waits that are over but were not resumed (a lost wake-up, a deadline). */
  sweepMs: number;
  /** Whether this replica sweeps (one replica of the fleet does). */
  sweeps: SweepTurn;
  /** Most bytes of children's artifacts and messages a resumed turn's message carries (the rest: `truncated`). */
  resultsMaxBytes: number;
  /**
   * A delegating turn whose wait is still not recorded this long after its end is failed by the
   * sweep (its children could not be created); the grace keeps an open() being retried unraced.
   */
  openGraceMs: number;
  /** After each commit (TaskCommits): wakes the relay, the push sender and the changed tasks' watchers. */
  committed: (commit: TaskCommit) => void;
  /**
   * The tenant's admission of one more task of `agent` (rate, a healthy worker, backlog), as a
   * caller's SendMessage passes it: the reason it refuses for now, else undefined. A refused child
   * waits (deferred) until it is admitted or its wait ends.
   */
  admit?: (tenant: string, agent: AgentRecord) => Promise<string | undefined>;
  metrics?: MeshMetrics;
  logger?: Logger;
}

/** Who the delegating turn acted for: its next turn acts for the same. */
interface Authority {
  subject: string;
  actor: string;
  scopes?: string[];
  act?: ActorClaim;
  traceparent?: string;
}

/** A wait as this service reads it: its authority in its own shape. */
type DelegationRow = DelegationWait & { authority: Authority };

type WaitEnd = DelegationResults['reason'];

const WORKING = stateName(TaskState.TASK_STATE_WORKING);
/** A child's actor chain: the delegating agent, acting for whoever its turn acted for. */
const childAct = (row: TaskRow, authority: Authority) => actFor(`agent:${row.agent_id}`, authority.act ?? { sub: authority.actor });
const turnOf = (executionId: string) => Number(executionId.slice(executionId.lastIndexOf(':') + 1));

/**
 * Delegation through the mesh (docs/agents.md, "Delegation"). A turn that ends by delegating
 * leaves its task WORKING; here, under the parent's row lock, its children are created (ids
 * derived from the parent execution: created once however often the event comes), with one
 * deadline (the parent's remaining one minus a reserve, at most the wait's timeout), the same
 * subject, an actor chain grown by the delegating agent and scopes that only narrow. When they
 * settle (all, or the first to complete) or the deadline passes, the children still open are
 * canceled and the parent's next turn starts with their outcomes. Every task of a tree charges
 * its takeovers and tool retries to one budget; spent, the tree fails. No worker waits meanwhile.
 */
export class DelegationService {
  private readonly schedule: PeriodicTask;
  private readonly log: Logger;
  private readonly budget: TreeBudget;

  constructor(
    private readonly repo: TaskRepository,
    private readonly tree: TaskTree,
    private readonly endings: TaskEndings,
    private readonly targets: DelegationTargets,
    private readonly opts: DelegationServiceOptions,
  ) {
    this.log = (opts.logger ?? silentLogger).child({ src: 'delegation' });
    this.budget = new TreeBudget(repo, opts.treeBudget);
    // A child CancelTask or a deadline settled: its parent may resume.
    endings.onChildSettled(({ parentTaskId, tenant }) => {
      this.resumeIfDone(parentTaskId, tenant).catch((err: unknown) =>
        this.log.warn({ parentTaskId, err: String(err) }, 'resuming a parent failed; the sweep retries'),
      );
    });
    this.schedule = new PeriodicTask(
      async () => {
        if (opts.sweeps.held) return this.sweep();
        // The fleet's count is the sweeping replica's to report.
        opts.metrics?.delegationsInFlight.set(0);
      },
      {
        intervalMs: opts.sweepMs,
        onError: (err) => this.log.warn({ err: String(err) }, 'delegation sweep failed; will retry'),
      },
    );
  }

  start(): void {
    this.schedule.start();
  }

  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /**
   * After worker events were projected (applied or already applied: each step is idempotent):
   * opens the waits of delegating turns, charges final events to their tree's budget, and
   * resumes the parent of a child that ended.
   */
  async afterProjected(events: readonly TaskEvent[]): Promise<void> {
    for (const e of events) {
      if (e.kind !== 'task.status' || !e.body.final) continue;
      if (e.body.delegation) await this.open(e);
      else if (e.identity.rootTaskId && e.body.usage)
        await this.charge(e.identity.rootTaskId, e.identity.tenant, e.identity.executionId, e.body.usage);
      if (e.identity.parentTaskId) await this.resumeIfDone(e.identity.parentTaskId, e.identity.tenant);
    }
  }

  /** Creates the children a delegating turn asked for and records the wait, once. */
  private async open(e: Extract<TaskEvent, { kind: 'task.status' }>): Promise<void> {
    const id = e.identity;
    const req = e.body.delegation!;
    const turn = turnOf(id.executionId);
    const admitted = await this.admitChildren(e);
    if (!admitted) return;
    const opened = await this.repo.transaction(async (tx) => {
      const row = await this.repo.lock(tx, id.taskId, id.tenant);
      // Ended meanwhile (canceled, failed at its deadline) or moved on: nothing to start.
      if (!row || row.turn !== turn || row.state !== WORKING || row.agent_id !== id.agentId) return undefined;
      if (await this.repo.waitRecorded(row.id, turn, tx)) return undefined;
      const rootTaskId = row.root_task_id ?? row.id;
      await this.budget.open(tx, rootTaskId, row.tenant);
      const spent = await this.budget.charge(tx, rootTaskId, id.executionId, e.body.usage);
      const now = Date.now();
      // The child's deadline (the wait's plus one sweep) stays the reserve short of the parent's.
      const parentLimit = row.deadline_at
        ? new Date(row.deadline_at).getTime() - this.opts.reserveMs - this.opts.sweepMs
        : Number.POSITIVE_INFINITY;
      const deadline = Math.min(now + Math.min(req.timeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs), parentLimit);
      const authority: Authority = {
        subject: id.subject,
        actor: id.actor,
        ...(id.scopes ? { scopes: id.scopes } : {}),
        ...(id.act ? { act: id.act } : {}),
        ...(id.traceparent ? { traceparent: id.traceparent } : {}),
      };
      const act = childAct(row, authority);
      const children: WaitChild[] = [];
      const delegator = this.targets.recordFor(row.agent_id, row.tenant);
      for (const c of req.children) {
        const target =
          c.agentId !== undefined
            ? this.targets.recordFor(c.agentId, row.tenant)
            : delegator && this.targets.bySkill(c.skill!, row.tenant, delegator.tenant);
        const refused =
          childTaskId(id.executionId, c.step, c) !== c.taskId
            ? 'the child task id is not the one derived from the parent execution, step and ask'
            : !target || target.retired
              ? c.agentId !== undefined
                ? `no agent "${c.agentId}" this tenant can use`
                : `no agent of the delegating agent's team that this tenant can use has the skill "${c.skill}"`
              : actorChainDepth(act) > MAX_ACTOR_CHAIN
                ? `the actor chain would be deeper than ${MAX_ACTOR_CHAIN} (a delegation loop?)`
                : spent.left < 0
                  ? 'the task tree spent its retry budget'
                  : deadline <= now
                    ? "no time is left before the parent's deadline"
                    : null;
        const entry: WaitChild = { step: c.step, taskId: c.taskId, agentId: target?.id ?? c.agentId ?? null, refused };
        children.push(entry);
        if (refused) continue;
        const deferred = admitted.get(c.step);
        if (deferred) {
          // Started by the delegation sweep once the tenant's admission lets it (or refused at the deadline).
          Object.assign(entry, { deferred, ask: { parts: c.parts, ...(c.scopes ? { scopes: c.scopes } : {}) } });
          continue;
        }
        entry.refused = await this.startChild(
          tx,
          row,
          this.childInput(row, authority, rootTaskId, target!, c, deadline, spent.left),
          c.taskId,
        );
      }
      await this.tree.recordChildren(
        tx,
        row,
        children.filter((c) => !c.refused && !c.deferred).map((c) => ({ taskId: c.taskId, agentId: c.agentId, step: c.step })),
      );
      await this.repo.insertWait(tx, {
        parent_task_id: row.id,
        turn,
        tenant: row.tenant,
        agent_id: row.agent_id,
        root_task_id: rootTaskId,
        join_mode: req.join,
        deadline_at: new Date(deadline),
        children,
        authority,
      });
      return { children, rootTaskId, exhausted: spent.exhausted };
    });
    if (!opened) return;
    // Children created with their commands; the parent's row changed only in its metadata (no stream event).
    this.opts.committed({ commands: true });
    this.opts.metrics?.delegations.inc({ event: 'opened' });
    const refused = opened.children.filter((c) => c.refused).length;
    const deferred = opened.children.filter((c) => c.deferred).length;
    if (refused > 0) this.opts.metrics?.delegations.inc({ event: 'child_refused' }, refused);
    if (deferred > 0) this.opts.metrics?.delegations.inc({ event: 'child_deferred' }, deferred);
    const started = opened.children.length - refused - deferred;
    if (started > 0) this.opts.metrics?.delegations.inc({ event: 'child_started' }, started);
    if (opened.exhausted) await this.failTree(opened.rootTaskId, id.tenant);
    // Every child refused: the wait is already over.
    if (refused === opened.children.length) await this.resumeIfDone(id.taskId, id.tenant);
  }

  /**
   * Passes each child of a delegating turn through its tenant's admission, as its own SendMessage
   * would: the refusals by step (undefined: the wait is recorded already, a redelivered event —
   * nothing is charged twice). A child is work of the tenant like any other, so a tree cannot
   * start more than the tenant may; one refused for now waits (deferred) as a caller would retry.
   */
  private async admitChildren(e: Extract<TaskEvent, { kind: 'task.status' }>): Promise<Map<number, string> | undefined> {
    const id = e.identity;
    if (await this.repo.waitRecorded(id.taskId, turnOf(id.executionId))) return undefined;
    const refusals = new Map<number, string>();
    const admit = this.opts.admit;
    if (!admit) return refusals;
    const delegator = this.targets.recordFor(id.agentId, id.tenant);
    for (const c of e.body.delegation!.children) {
      const target =
        c.agentId !== undefined
          ? this.targets.recordFor(c.agentId, id.tenant)
          : delegator && this.targets.bySkill(c.skill!, id.tenant, delegator.tenant);
      if (!target || target.retired) continue; // refused for that in open()
      const refused = await admit(id.tenant, target);
      if (refused) refusals.set(c.step, refused);
    }
    return refusals;
  }

  /** What a child starts with: its ask, for the delegating turn's subject, as the delegating agent, scopes narrowed. */
  private childInput(
    row: TaskRow,
    authority: Authority,
    rootTaskId: string,
    target: AgentRecord,
    ask: { step: number; taskId: string; parts: Array<Record<string, unknown>>; scopes?: string[] },
    deadline: number,
    retryLeft: number,
  ): AcceptInput {
    return {
      principal: {
        tenant: row.tenant,
        subject: authority.subject,
        actor: `agent:${row.agent_id}`,
        scopes: narrowScopes(authority.scopes ?? [], ask.scopes),
      },
      agent: target,
      message: Message.fromJSON({
        messageId: `${PLATFORM_MESSAGE_ID_PREFIX}child:${ask.taskId}`,
        role: 'ROLE_USER',
        parts: ask.parts,
        referenceTaskIds: [row.id],
        metadata: { 'mesh/parent_task_id': row.id, 'mesh/root_task_id': rootTaskId, 'mesh/step': ask.step },
      }),
      // The wait ends at `deadline` and the dispatcher cancels what is open then; the child's own
      // deadline, its worker's backstop, is one sweep later, so the cancel (not a race) decides.
      deadlineUnixMs: deadline + this.opts.sweepMs,
      ...(authority.traceparent ? { traceparent: authority.traceparent } : {}),
      tree: {
        rootTaskId,
        parentTaskId: row.id,
        act: childAct(row, authority),
        retryBudget: retryLeft,
      },
    };
  }

  /** Creates a child under its parent's row lock; the reason it is refused when its first message is too large, else null. */
  private async startChild(tx: TaskTransaction, row: TaskRow, input: AcceptInput, taskId: string): Promise<string | null> {
    try {
      await this.tree.createChild(tx, input, taskId, row.context_id, { taskId: row.id, agentId: row.agent_id });
      return null;
    } catch (err) {
      if (!(err instanceof CommandTooLargeError)) throw err;
      return `the delegated message is larger than the agent's channel accepts (${err.message})`;
    }
  }

  /**
   * Starts the deferred children of `parentTaskId`'s open wait that its tenant's admission lets in
   * now, under the parent's row lock; at the wait's deadline, refuses those still deferred (they
   * come back `rejected` with the reason). Then the wait may be over.
   */
  async startDeferred(parentTaskId: string, tenant: string): Promise<void> {
    const started = await this.repo.transaction(async (tx) => {
      const row = await this.repo.lock(tx, parentTaskId, tenant);
      if (!row || row.state !== WORKING) return 0;
      const waits = (await this.repo.openWaits(tx, parentTaskId, tenant)) as DelegationRow[];
      const wait = waits.find((w) => w.turn === row.turn);
      if (!wait) return 0;
      const deadline = new Date(wait.deadline_at).getTime();
      const spent = await this.budget.spent(tx, wait.root_task_id);
      const begun: WaitChild[] = [];
      let changed = false;
      for (const c of wait.children) {
        if (!c.deferred || !c.ask) continue;
        const target = c.agentId ? this.targets.recordFor(c.agentId, row.tenant) : undefined;
        let refused: string | null;
        if (deadline <= Date.now()) refused = `not started before the delegation's deadline: ${c.deferred}`;
        else if (!target || target.retired) refused = `no agent "${c.agentId}" this tenant can use`;
        else {
          const still = await this.opts.admit?.(row.tenant, target);
          if (still) continue;
          const ask = { step: c.step, taskId: c.taskId, ...c.ask };
          refused = await this.startChild(
            tx,
            row,
            this.childInput(row, wait.authority, wait.root_task_id, target, ask, deadline, spent.left),
            c.taskId,
          );
          if (!refused) begun.push(c);
        }
        Object.assign(c, { refused, deferred: null, ask: undefined });
        changed = true;
      }
      if (!changed) return 0;
      await this.tree.recordChildren(
        tx,
        row,
        begun.map((c) => ({ taskId: c.taskId, agentId: c.agentId, step: c.step })),
      );
      await this.repo.updateWaitChildren(tx, row.id, wait.turn, wait.children);
      return begun.length;
    });
    if (started > 0) {
      this.opts.committed({ commands: true });
      this.opts.metrics?.delegations.inc({ event: 'child_started' }, started);
    }
    await this.resumeIfDone(parentTaskId, tenant);
  }

  /**
   * Ends the wait of `parentTaskId` when it is over — every child settled, the first completed
   * (`first`), or its deadline passed — canceling the children still open and starting the
   * parent's next turn with the outcomes. A wait whose parent ended or moved on is closed.
   */
  async resumeIfDone(parentTaskId: string, tenant: string): Promise<WaitEnd | undefined> {
    const changed: ChangedTask[] = [];
    const ended = await this.repo.transaction(async (tx) => {
      changed.length = 0; // a transaction run again after a lock race starts over
      const row = await this.repo.lock(tx, parentTaskId, tenant);
      const waits = (await this.repo.openWaits(tx, parentTaskId, tenant)) as DelegationRow[];
      const wait = waits.find((w) => row && w.turn === row.turn);
      // Waits of a parent that ended (its children were canceled with it) or of an older turn.
      const stale = waits.filter((w) => w !== wait || row?.state !== WORKING);
      if (stale.length > 0)
        await this.repo.endWaits(
          tx,
          parentTaskId,
          stale.map((w) => w.turn),
          'parent-ended',
        );
      if (!row || !wait || row.state !== WORKING) return undefined;
      return this.endWait(tx, row, wait, changed);
    });
    if (ended) {
      this.opts.committed({ commands: true, deliveries: true, changed });
      this.opts.metrics?.delegations.inc({ event: `ended_${ended}` });
    }
    return ended;
  }

  /** Ends a wait that is over under `tx`; the tasks it changed are added to `changed`. */
  private async endWait(tx: TaskTransaction, row: TaskRow, wait: DelegationRow, changed: ChangedTask[]): Promise<WaitEnd | undefined> {
    const ids = wait.children.filter((c) => !c.refused).map((c) => c.taskId);
    const rows = await this.repo.childRows(tx, ids, row.tenant);
    const byId = new Map(rows.map((r) => [r.id, r]));
    // A child whose row is gone (retention) is over too; a deferred one has not started.
    const settled = (c: WaitChild) =>
      c.refused !== null || (!c.deferred && (!byId.has(c.taskId) || isSettled(parseState(byId.get(c.taskId)!.state)!)));
    const firstDone = wait.join_mode === 'first' && rows.some((r) => r.state === TaskStates.completed);
    const reason: WaitEnd | undefined = firstDone
      ? 'first'
      : wait.children.every(settled)
        ? 'settled'
        : new Date(wait.deadline_at).getTime() <= Date.now()
          ? 'deadline'
          : undefined;
    if (!reason) return undefined;
    const unfinished: number[] = [];
    for (const c of wait.children) {
      if (c.deferred) {
        // Never started: it comes back rejected, with why it waited.
        Object.assign(c, { refused: `not started before the wait ended: ${c.deferred}`, deferred: null, ask: undefined });
        continue;
      }
      if (settled(c)) continue;
      const why = reason === 'first' ? 'another child of its parent completed first' : 'its delegation deadline passed';
      changed.push(...(await this.endings.cancelChild(tx, c.taskId, row.tenant, why)));
      unfinished.push(c.step);
    }
    const outcomes = wait.children.map((c): ChildOutcome => {
      const r = byId.get(c.taskId);
      const message = r?.task.status?.message;
      return {
        step: c.step,
        taskId: c.taskId,
        ...(c.agentId && !c.refused ? { agentId: c.agentId } : {}),
        state: c.refused ? TaskStates.rejected : unfinished.includes(c.step) ? TaskStates.canceled : (r?.state ?? TaskStates.canceled),
        artifacts: (r?.task.artifacts as ChildOutcome['artifacts'] | undefined) ?? [],
        ...(c.refused
          ? { message: { role: 'ROLE_AGENT', parts: [{ text: `Not started: ${c.refused}.` }] } }
          : message
            ? { message: message as ChildOutcome['message'] }
            : {}),
      };
    });
    const agent = this.targets.recordFor(row.agent_id, row.tenant);
    if (!agent) {
      // The delegating agent is gone: nobody could run its next turn. The wait stays open for the sweep.
      this.log.warn({ taskId: row.id, agentId: row.agent_id }, 'the delegating agent is unknown; its task cannot resume yet');
      return undefined;
    }
    const a = wait.authority;
    const spent = await this.budget.spent(tx, wait.root_task_id);
    // The results fit the parent's command: bounded by DISPATCHER_DELEGATION_RESULTS_MAX_BYTES, and
    // more tightly when the command would still be larger than its topic takes (CommandTooLargeError).
    let maxBytes = this.opts.resultsMaxBytes;
    for (;;) {
      const children = boundChildResults(outcomes, maxBytes);
      try {
        await this.resume(tx, row, wait, reason, { reason, unfinished, children }, agent, a, spent.left, ids);
        break;
      } catch (err) {
        if (!(err instanceof CommandTooLargeError)) throw err;
        if (maxBytes === 0) {
          // Not even the outcomes without their artifacts and messages fit: the parent cannot go on.
          changed.push(...(await this.endings.failDelegationResults(tx, row, err.message)));
          await this.repo.endWaits(tx, row.id, [wait.turn], reason);
          return reason;
        }
        // What the results carried, less what the command is over by (and some room): at most
        // two more tries, the last with no artifact or message at all.
        const carried = Buffer.byteLength(JSON.stringify(children));
        const fits = carried - (err.commandBytes - err.limitBytes) - 1024;
        maxBytes = fits > 0 && fits < maxBytes && maxBytes === this.opts.resultsMaxBytes ? fits : 0;
      }
    }
    // The resumed turn logged the parent's resubmission; its watchers here read it.
    changed.push({ taskId: row.id });
    await this.repo.endWaits(tx, row.id, [wait.turn], reason);
    return reason;
  }

  /** Starts the parent's next turn with its children's outcomes (the message delegation results carry). */
  private async resume(
    tx: TaskTransaction,
    row: TaskRow,
    wait: DelegationRow,
    reason: WaitEnd,
    results: DelegationResults,
    agent: AgentRecord,
    a: Authority,
    left: number,
    ids: string[],
  ): Promise<void> {
    const summary = `Delegated work ${reason === 'deadline' ? 'stopped at its deadline' : reason === 'first' ? 'done (first completed)' : 'settled'}: ${results.children
      .map(
        (c) =>
          `${c.agentId ?? `step ${c.step}`} ${stateName(parseState(c.state) ?? TaskState.TASK_STATE_CANCELED)
            .replace('TASK_STATE_', '')
            .toLowerCase()}`,
      )
      .join(', ')}.`;
    const input: AcceptInput = {
      principal: { tenant: row.tenant, subject: a.subject, actor: a.actor, scopes: a.scopes ?? [] },
      agent,
      message: Message.fromJSON({
        messageId: `${PLATFORM_MESSAGE_ID_PREFIX}delegation:${row.id}:${wait.turn}`,
        role: 'ROLE_USER',
        parts: [{ text: summary }, { data: results, metadata: { [DELEGATION_RESULTS_KEY]: true } }],
        referenceTaskIds: ids,
        metadata: { 'mesh/from': 'mesh:delegation' },
      }),
      ...(a.traceparent ? { traceparent: a.traceparent } : {}),
      tree: {
        rootTaskId: wait.root_task_id,
        ...(row.parent_task_id ? { parentTaskId: row.parent_task_id } : {}),
        ...(a.act ? { act: a.act } : {}),
        retryBudget: Math.max(0, left),
      },
    };
    await this.tree.resumeTurn(tx, row, input);
  }

  /** Charges one final event's usage to its tree; fails the tree the first time its budget is spent. */
  private async charge(rootTaskId: string, tenant: string, executionId: string, usage: TurnUsage): Promise<void> {
    const spent = await this.repo.transaction((tx) => this.budget.charge(tx, rootTaskId, executionId, usage));
    if (spent.exhausted) await this.failTree(rootTaskId, tenant);
  }

  /** Fails the tree's root (its live descendants are canceled with it), the counts on its status. */
  private async failTree(rootTaskId: string, tenant: string): Promise<void> {
    const failed = await this.repo.transaction(async (tx) => {
      const spent = await this.budget.spent(tx, rootTaskId);
      return this.endings.failTree(tx, rootTaskId, tenant, {
        budget: spent.budget,
        redeliveries: spent.redeliveries,
        retries: spent.retries,
      });
    });
    if (failed.length === 0) return;
    this.opts.committed({ commands: true, deliveries: true, changed: failed });
    this.opts.metrics?.retryBudgetExhausted.inc();
    this.log.warn({ rootTaskId, tenant }, 'task tree failed: its retry budget is spent');
  }

  /**
   * Waits that are over but were not resumed — a wake-up lost to a crash, a deadline passed, a
   * parent that ended — picked by one statement and ended one by one; delegating tasks whose wait
   * was never recorded, failed (see {@link failUnopened}); also the in-flight gauge.
   */
  async sweep(limit = 100): Promise<number> {
    // Children their tenant's admission deferred: started once it lets them, refused at the deadline.
    const deferring = await this.repo.waitsWithDeferred(limit);
    for (const d of deferring) await this.startDeferred(d.parent_task_id, d.tenant);
    const due = await this.repo.dueWaits(limit);
    for (const d of due) await this.resumeIfDone(d.parent_task_id, d.tenant);
    // Delegating turns that ended (execution closed, task WORKING) with no wait recorded, past the
    // grace: their open() kept failing and the event was dead-lettered. Nothing else would end them.
    const unopened = await this.repo.unopenedDelegations(this.opts.openGraceMs, limit);
    for (const u of unopened) await this.failUnopened(u.id, u.tenant, u.turn);
    this.opts.metrics?.delegationsInFlight.set(await this.repo.openWaitCount());
    return due.length + unopened.length;
  }

  /**
   * Fails a delegating task whose wait was never recorded (see {@link sweep}), under its row lock,
   * re-checked there: an open() that commits first wins, and this one then changes nothing.
   */
  async failUnopened(taskId: string, tenant: string, turn: number): Promise<boolean> {
    const failed = await this.repo.transaction(async (tx) => {
      const row = await this.repo.lock(tx, taskId, tenant);
      if (!row || row.state !== WORKING || row.turn !== turn) return undefined;
      if (!(await this.repo.isUnopened(tx, taskId, turn))) return undefined;
      return { row, changed: await this.endings.failUnopenedDelegation(tx, row) };
    });
    if (!failed) return false;
    this.opts.committed({
      commands: true,
      deliveries: true,
      changed: failed.changed,
      outcomes: [{ tenant, agent: failed.row.agent_id, outcome: 'failed' }],
    });
    this.opts.metrics?.delegations.inc({ event: 'not_opened' });
    this.log.warn({ taskId, tenant, turn }, 'a delegating task was failed: its children could not be created');
    return true;
  }
}
