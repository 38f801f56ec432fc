import { countDeadLetters, isTransientKafkaError, type KafkaBusTransportOptions, type MessageContext } from '@mesh/bus';
import { isTransientPostgresError } from '@mesh/database';
import type { Task } from '@a2a-js/sdk';
import { anyTransient, type ConsumerGroups, type Envelope, type TaskEvent, type TopicDefinitions } from '@mesh/contract';
import type { LoggedEvent, TaskProjection } from '../tasks/task-projection.js';
import type { TaskCommit, TaskCommits } from '../tasks/task-commits.js';
import { silentLogger, type Logger, type MeshMetrics } from '@mesh/telemetry';
import { isSettled, outcomeLabel } from '../tasks/task-state.js';
import type { EventSignatures } from '../teams/event-signatures.js';
import type { EventRefusals } from '../teams/event-refusals.js';

/** What the projector writes to and feeds, and where it logs. */
export interface EventProjectorOptions {
  tasks: TaskProjection;
  /** Told of every commit: wakes the push sender and the task's watchers here, counts settled turns. */
  commits: Pick<TaskCommits, 'committed'>;
  /** Told of every projected batch: delegations opened, trees charged, parents resumed. */
  delegation?: { afterProjected(events: readonly TaskEvent[]): Promise<void> };
  /** The service's logger (lines carry `src: event-projector`). */
  logger?: Logger;
  /** Records of this topic (the team events topic) are projected only when their signature is believed. */
  teamEvents?: { topic: string; signatures: Pick<EventSignatures, 'check'> };
  /** Told of every event dropped: a team event not believed, an event the task's identity refutes. */
  refusals?: Pick<EventRefusals, 'refused'>;
}

/**
 * Projects the agents' events (key: task id) into the task store. They arrive through the
 * projector's `KafkaBusTransport` (see {@link projectorConsumerOptions}) in batch mode: events of
 * one task in offset order — those queued together in one write — different tasks in parallel;
 * the committed offset never passes an unfinished event. Each commit goes to TaskCommits: the
 * task's streams and blocking sends here get the logged events at once. A failed write is retried by
 * the consumer (then dead-lettered); undecodable records go to the dead-letter topic without
 * reaching the handler.
 */
export class EventProjector {
  private readonly tasks: TaskProjection;
  private readonly commits: EventProjectorOptions['commits'];
  private readonly delegation?: EventProjectorOptions['delegation'];
  private readonly log: Logger;
  private readonly teamEvents?: EventProjectorOptions['teamEvents'];
  private readonly refusals?: EventProjectorOptions['refusals'];

  constructor(opts: EventProjectorOptions) {
    this.tasks = opts.tasks;
    this.commits = opts.commits;
    this.delegation = opts.delegation;
    this.teamEvents = opts.teamEvents;
    this.refusals = opts.refusals;
    this.log = (opts.logger ?? silentLogger).child({ src: 'event-projector' });
  }

  /**
   * Consecutive events of one task queued together (an artifact and the COMPLETED behind it),
   * projected in one write; if that fails the consumer hands them over again one at a time.
   */
  async projectRecords(envelopes: readonly Envelope[], contexts: readonly MessageContext[]): Promise<void> {
    const events: TaskEvent[] = [];
    const origins = new Map<TaskEvent, MessageContext>();
    for (const [i, envelope] of envelopes.entries()) {
      const ctx = contexts[i];
      if (envelope.kind !== 'task.status' && envelope.kind !== 'task.artifact') {
        this.log.warn({ kind: envelope.kind }, 'skipped a command on the event topic');
        continue;
      }
      if (ctx && !(await this.believed(envelope, ctx))) continue;
      events.push(envelope);
      if (ctx) origins.set(envelope, ctx);
    }
    if (events.length === 0) return;
    try {
      await this.project(events, origins);
    } catch (err) {
      // The consumer retries (then dead-letters); say why, once per attempt.
      this.log.warn({ taskId: events[0].identity.taskId, attempt: contexts[0]?.attempt, err: String(err) }, 'projecting events failed');
      throw err;
    }
  }

  /** A record of the platform's events topic, or a team event whose signature the team's binding backs. */
  private async believed(event: TaskEvent, ctx: MessageContext): Promise<boolean> {
    if (!this.teamEvents || ctx.topic !== this.teamEvents.topic) return true;
    const verdict = await this.teamEvents.signatures.check(event, ctx.headers);
    if (verdict.ok) return true;
    this.refusals?.refused(verdict.reason, event, ctx, verdict.kid);
    return false;
  }

  /**
   * Projects consecutive events of one task and hands the commit to TaskCommits; `origins` says
   * where each came from, for the log line of one the task refuses.
   */
  async project(events: TaskEvent[], origins?: ReadonlyMap<TaskEvent, MessageContext>): Promise<void> {
    const outcomes = await this.tasks.applyEvents(events);
    let committed: Task | undefined;
    let deliveries = 0;
    const logged: LoggedEvent[] = [];
    const settled: NonNullable<TaskCommit['outcomes']>[number][] = [];
    for (const [i, outcome] of outcomes.entries()) {
      if (outcome.applied) {
        committed = outcome.task;
        logged.push(outcome.logged);
        deliveries += outcome.deliveries;
        // The state as stored (a COMPLETED without artifact is FAILED), once per settling event.
        const state = outcome.task.status?.state;
        // A late report of a turn the dispatcher ended settles nothing: the task was counted then.
        if (outcome.event.kind === 'task.status' && !outcome.late && state !== undefined && isSettled(state)) {
          const { tenant, agentId } = outcome.event.identity;
          settled.push({ tenant, agent: agentId, outcome: outcomeLabel(state) });
        }
      }
      // An event naming another agent or context than its task's: a worker reporting on a task not
      // its own (outcomes come one per event, in order).
      else if (outcome.reason === 'identity-mismatch') this.refusals?.refused('identity-mismatch', events[i], origins?.get(events[i]));
      // A re-consumed duplicate records nothing: its deliveries were recorded with it, for the
      // configs the task had then. A config made since gets the events after it, in their order.
    }
    // Its push deliveries were recorded with the change; its streams and blocking sends here get
    // the logged events and the task as committed (no read back).
    if (committed) {
      this.commits.committed({
        // The projection's statement told the other replicas (TaskCommitSignal).
        told: true,
        deliveries: deliveries > 0,
        changed: [{ taskId: committed.id, logged, task: committed }],
        outcomes: settled,
      });
    }
    // After the change is stored, whether applied now or before a crash (each step is idempotent):
    // a failure here makes the consumer hand the events over again.
    await this.delegation?.afterProjected(events);
  }
}

/**
 * The projector's consumer: one group shared by every replica (`ConsumerGroups.dispatcherProjector`),
 * reading the events topic and the team events topic from the beginning, a task's queued events handed over together.
 */
export function projectorConsumerOptions(
  topics: TopicDefinitions,
  groups: ConsumerGroups,
  logger: Logger = silentLogger,
  metrics?: MeshMetrics,
): KafkaBusTransportOptions {
  const log = logger.child({ src: 'event-projector' });
  return {
    ...(metrics ? { onDeadLetter: countDeadLetters(metrics.deadLetters, [topics.events().name, topics.teamEvents().name]) } : {}),
    groupId: groups.dispatcherProjector(),
    // One consumer, one group over both: a task's events keep their order and offsets in one place
    // (kafkajs fixes a consumer's topics when it subscribes, so per-team topics would need one each).
    topics: [topics.events().name, topics.teamEvents().name],
    topicDefinitions: topics,
    batches: true,
    // Projecting writes to Postgres: a database restart is an outage, not a bad event.
    isTransient: anyTransient(isTransientKafkaError, isTransientPostgresError),
    fromBeginning: true,
    // Many tasks' events in flight at once: their projection statements share batches.
    maxInFlight: 256,
    commitIntervalMs: 200,
    // A dead replica's partitions move to the others after 10 s, not kafkajs's default 30 s. The
    // broker answers a fetch as soon as events come; with none it waits 500 ms, so an idle process
    // polls twice a second (at 100 ms, with the catalog at 250, polls were a third of its idle
    // CPU). The price: a stop waits for the fetch in flight.
    consumerConfig: { maxWaitTimeInMs: 500, sessionTimeout: 10000, heartbeatInterval: 1000 },
    onError: (err, what) => log.warn({ err: String(err) }, what),
  };
}
