import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { decodeEnvelope, isRetryable, normalizeHeaders, sleep, TopicDefinitions, wakeableSleep, type Envelope } from '@mesh/contract';
import { untracedConsumer, withConsumerSpan } from '@mesh/telemetry';
import { BusAdmin } from './bus-admin.js';
import { BusProducer } from './bus-producer.js';
import { runSupervised } from './consumer-supervisor.js';
import type { BusConsumerOptions, BusConsumerStats, DeadLetterReason, EnvelopeHandler, KeyedBatchHandler } from './consumer-types.js';
import { RecordContext } from './record-context.js';
import { isTransientKafkaError } from './transient-errors.js';
import { deadLetterHeaders, deadLetterTopic } from './dead-letters.js';
import { FinishedOffsets } from './finished-offsets.js';
import { InFlightSlots } from './in-flight-slots.js';
import { KeyQueues } from './key-queues.js';
import { partitionId, PartitionState } from './partition-state.js';

interface WorkItem {
  state: PartitionState;
  offset: number;
  message: KafkaMessage;
  envelope?: Envelope;
  decodeError?: unknown;
  /** Partition-scoped ordering key. */
  queueKey: string;
  /** The tenant whose slots it takes; undefined: it is outside the per-tenant limit. */
  tenant: string | undefined;
}

type Outcome = 'done' | 'abandoned';

const defaultOrderingKey = (e: Envelope) => e.identity.taskId;

/**
 * Keyed parallel consumer after Confluent's Parallel Consumer (KEY ordering): kafkajs fetches,
 * this class schedules. Within a partition, messages of different ordering keys run
 * concurrently up to the in-flight limit, messages of one key run one at a time in offset order,
 * and the committed offset never passes an unfinished message. Failures are retried, then
 * dead-lettered; partitions pause while the buffer is full.
 */
export class BusConsumer {
  private readonly consumer: Consumer;
  private readonly producer: BusProducer;
  private readonly admin: BusAdmin;
  private readonly slots: InFlightSlots;
  private readonly queues = new KeyQueues<WorkItem>((w) => w.queueKey);
  private readonly states = new Map<string, PartitionState>();
  /** States revoked since the last join: committable by their drain until the group has a new generation. */
  private readonly revoked = new Set<PartitionState>();
  private pausedCount = 0;
  private readonly maxBuffered: number;
  private readonly resumeBelow: number;
  private readonly orderingKey: (e: Envelope) => string;
  private readonly maxAttempts: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly drainTimeoutMs: number;
  private readonly metadataChars: number;
  /** The group's commits (with their metadata) per epoch and topic, read once per assignment. */
  private readonly commitsRead = new Map<string, Promise<Map<number, FinishedOffsets | null>>>();
  /** Calls the user's handler with one record (start) or a key's records (startBatches). */
  private handle?: (items: WorkItem[], attempt: number, signal: AbortSignal) => Promise<void>;
  /** Records of one key handed over at once: 1, or maxBatchPerKey with startBatches. */
  private maxPerKey = 1;
  private epoch = 0;
  private bufferedCount = 0;
  private commitTimer?: NodeJS.Timeout;
  private commitChain: Promise<void> = Promise.resolve();
  private revoking?: Promise<void>;
  /** Between a revocation and the next GROUP_JOIN: no batch is taken. */
  private rejoining = false;
  private stopping?: Promise<void>;
  private idleWaiters: Array<() => void> = [];
  private roomWaiters: Array<() => void> = [];
  private readonly counters = { processed: 0, retried: 0, deadLettered: 0, commits: 0, rebalances: 0, skippedFinished: 0 };
  /** Partitions the group assigned this member at its last join. */
  private assigned = 0;

  constructor(
    kafka: Kafka,
    private readonly opts: BusConsumerOptions,
  ) {
    const maxInFlight = opts.maxInFlight ?? 64;
    this.slots = new InFlightSlots(maxInFlight, opts.perTenantInFlight ?? Infinity);
    this.maxBuffered = opts.maxBuffered ?? Math.max(4 * maxInFlight, 1024);
    this.resumeBelow = Math.max(1, Math.floor(this.maxBuffered / 2));
    this.orderingKey = opts.orderingKey ?? defaultOrderingKey;
    this.maxAttempts = Math.max(1, opts.retry?.maxAttempts ?? 5);
    this.initialBackoffMs = opts.retry?.initialBackoffMs ?? 200;
    this.maxBackoffMs = opts.retry?.maxBackoffMs ?? 30_000;
    this.drainTimeoutMs = opts.drainTimeoutMs ?? 10_000;
    this.metadataChars = opts.commitMetadataMaxChars ?? 4000;
    // Each record is handled in a span of the bus's own (`traced`), so not the instrumentation's too.
    this.consumer = untracedConsumer(
      kafka.consumer({
        // kafkajs sleeps this long when every assigned partition is paused; 5 s (its default) stalls resumes.
        maxWaitTimeInMs: 500,
        ...opts.consumerConfig,
        groupId: opts.groupId,
        allowAutoTopicCreation: false,
      }),
    );
    this.producer = new BusProducer(kafka, opts.deadLetterProducer);
    this.admin = new BusAdmin(kafka);
  }

  /** Joins the group and starts handing envelopes to `handler`; resolves once the first assignment arrived. */
  start(handler: EnvelopeHandler): Promise<void> {
    return this.begin((items, attempt, signal) => {
      const [w] = items;
      return handler(w.envelope!, new RecordContext(w.state, w.message, attempt, signal));
    });
  }

  /**
   * Like `start`, but a record whose key has more records queued behind it is handed over together
   * with them (up to `maxBatchPerKey`, in offset order), so the handler can do one piece of work for
   * all of them — the dispatcher's projector writes a task's artifact and its COMPLETED at once.
   * Ordering, commits and backpressure are the same; on a rejection the records are handled again
   * one at a time through `handler` with the usual retries and dead-lettering.
   */
  startBatches(handler: KeyedBatchHandler): Promise<void> {
    this.maxPerKey = Math.max(1, this.opts.maxBatchPerKey ?? 16);
    return this.begin((items, attempt, signal) =>
      handler(items.map((w) => ({ envelope: w.envelope!, ctx: new RecordContext(w.state, w.message, attempt, signal) }))),
    );
  }

  private async begin(handle: (items: WorkItem[], attempt: number, signal: AbortSignal) => Promise<void>): Promise<void> {
    if (this.handle) throw new Error('BusConsumer already started');
    this.handle = handle;
    if (this.opts.ensureDeadLetterTopics ?? true) {
      const definitions = this.opts.topicDefinitions ?? new TopicDefinitions('');
      for (const topic of this.opts.topics) {
        const dlq = definitions.deadLetters(topic);
        await this.admin.ensureTopic(dlq.name, dlq);
      }
    }
    await this.producer.connect();
    const { GROUP_JOIN, REBALANCING } = this.consumer.events;
    // kafkajs has no "partitions revoked" callback: REBALANCING marks the start of a rejoin and
    // GROUP_JOIN its end (with the new assignment); see docs/bus.md.
    this.consumer.on(REBALANCING, () => void this.revokeAll());
    this.consumer.on(GROUP_JOIN, (e) => this.onJoined(e.payload.memberAssignment ?? {}));
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: this.opts.topics, fromBeginning: this.opts.fromBeginning ?? false });
    // The rejoin after a restart retires every partition's state, as any GROUP_JOIN does.
    await runSupervised(
      this.consumer,
      {
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.opts.partitionsConsumedConcurrently ?? 1,
        eachBatch: (payload) => this.onBatch(payload),
      },
      { stopping: () => this.stopping !== undefined, report: this.opts.onError },
    );
    this.commitTimer = setInterval(() => void this.commit([...this.states.values()]), this.opts.commitIntervalMs ?? 500);
    this.commitTimer.unref();
  }

  /** Stops taking work, waits up to the drain timeout for running handlers, commits what finished and leaves the group. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /** Nest lifecycle hook, so an instance registered as a provider drains and leaves the group on shutdown. */
  onModuleDestroy(): Promise<void> {
    return this.stop();
  }

  /** Current gauges and counters, e.g. for Prometheus. */
  stats(): BusConsumerStats {
    const partitions = [...this.states.values()].map((s) => ({
      topic: s.topic,
      partition: s.partition,
      inFlight: s.inFlight,
      buffered: s.buffered,
      unfinished: s.tracker.unfinished,
      committed: s.committed,
      paused: s.paused,
    }));
    return {
      inFlight: this.slots.inFlight,
      buffered: this.bufferedCount,
      pausedPartitions: partitions.filter((p) => p.paused).length,
      assignedPartitions: this.assigned,
      inFlightByTenant: this.slots.perTenant(),
      ...this.counters,
      partitions,
    };
  }

  // ---- intake -------------------------------------------------------------------------------

  private async onBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload): Promise<void> {
    // Batches still queued in kafkajs from before a revocation are stale: their records were fetched
    // past messages we dropped, so committing them would skip those. The next assignment refetches.
    if (this.stopping || this.rejoining || batch.messages.length === 0) return;
    const state = this.stateFor(batch.topic, batch.partition);
    if (state.restored === undefined) {
      state.restored = await this.finishedByPreviousOwner(state);
      if (this.stopping || state.revoked) return; // refetched by whoever owns it next
    }
    for (const message of batch.messages) {
      const offset = Number(message.offset);
      // A refetch after pause/resume may repeat records we already hold.
      if (offset <= state.tracker.lastReceived) continue;
      state.tracker.add(offset);
      if (state.restored?.has(offset)) {
        // Finished before the last commit by the previous owner (or by us before a restart).
        state.tracker.complete(offset);
        this.counters.skippedFinished++;
        continue;
      }
      this.queues.push(this.workItem(state, offset, message));
      state.buffered++;
      this.bufferedCount++;
    }
    // Advances kafkajs' fetch position only; commits are ours (autoCommit is off).
    resolveOffset(batch.messages[batch.messages.length - 1].offset);
    const full = this.bufferedCount >= this.maxBuffered;
    if (full) this.pause(state);
    this.dispatch();
    await this.heartbeat(heartbeat);
    // Hold kafkajs here while the buffer is full instead of returning: with every partition paused
    // its fetch loop would sleep maxWaitTimeInMs before noticing a resume. Heartbeats go on.
    while (full && state.paused && !state.revoked && !this.stopping) {
      await this.waitForRoom(1000);
      await this.heartbeat(heartbeat);
    }
  }

  private async heartbeat(heartbeat: () => Promise<void>): Promise<void> {
    try {
      await heartbeat();
    } catch (err) {
      // A rebalance noticed here lets us drain before kafkajs rejoins (it awaits this callback).
      if (isRebalancing(err)) await this.revokeAll();
      throw err;
    }
  }

  private waitForRoom(ms: number): Promise<void> {
    return wakeableSleep(ms, (wake) => this.roomWaiters.push(wake));
  }

  private notifyRoom(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of waiters) w();
  }

  private workItem(state: PartitionState, offset: number, message: KafkaMessage): WorkItem {
    const base = `${state.partition}\u0000`;
    try {
      const envelope = decodeEnvelope({ headers: message.headers, value: message.value });
      const tenant = this.opts.outsideTenantLimit?.(envelope) ? undefined : envelope.identity.tenant;
      return { state, offset, message, envelope, queueKey: base + this.orderingKey(envelope), tenant };
    } catch (decodeError) {
      // Undecodable: no ordering key to honour; it only has to reach the dead-letter topic.
      const tenant = normalizeHeaders(message.headers).tenant ?? '';
      return { state, offset, message, decodeError, queueKey: `${base}\u0001${offset}`, tenant };
    }
  }

  /**
   * What the partition's last commit says finished above it (null: nothing, or not readable —
   * then those records simply run again, as they would without the metadata).
   */
  private async finishedByPreviousOwner(state: PartitionState): Promise<FinishedOffsets | null> {
    if (this.metadataChars <= 0) return null;
    const key = `${state.epoch}\u0000${state.topic}`;
    let read = this.commitsRead.get(key);
    if (!read) {
      for (const k of this.commitsRead.keys()) if (!k.startsWith(`${state.epoch}\u0000`)) this.commitsRead.delete(k);
      read = this.admin
        .committedOffsets(this.opts.groupId, state.topic)
        .then((rows) => new Map(rows.map((r) => [r.partition, FinishedOffsets.decode(r.offset, r.metadata) ?? null])));
      this.commitsRead.set(key, read);
    }
    try {
      return (await read).get(state.partition) ?? null;
    } catch (err) {
      this.commitsRead.delete(key);
      this.opts.onError?.(err, 'reading the offsets finished above the last commit');
      return null;
    }
  }

  private stateFor(topic: string, partition: number): PartitionState {
    const id = partitionId(topic, partition);
    let s = this.states.get(id);
    if (!s) this.states.set(id, (s = new PartitionState(topic, partition, this.epoch)));
    return s;
  }

  // ---- scheduling ---------------------------------------------------------------------------

  private dispatch(): void {
    if (this.stopping) return;
    while (this.slots.hasRoom) {
      const item = this.queues.take((w) => this.slots.canReserve(w.tenant));
      if (!item) break;
      this.slots.tryReserve(item.tenant);
      // With startBatches the key's next queued records (decoded, same assignment) come along.
      const group =
        this.maxPerKey > 1 && item.envelope
          ? [item, ...this.queues.takeMore(item, this.maxPerKey - 1, (w) => w.envelope !== undefined && w.state === item.state)]
          : [item];
      item.state.buffered -= group.length;
      this.bufferedCount -= group.length;
      item.state.inFlight++;
      void this.run(group);
    }
    if (this.pausedCount > 0 && this.bufferedCount <= this.resumeBelow) this.resumeAll();
  }

  /** Runs one record, or a key's records together (startBatches); completes those that finished. */
  private async run(group: WorkItem[]): Promise<void> {
    const [first] = group;
    let finished: WorkItem[] = [];
    try {
      if (group.length === 1) finished = (await this.process(first)) === 'done' ? group : [];
      else finished = await this.processTogether(group);
    } catch (err) {
      this.opts.onError?.(err, 'process');
    } finally {
      const { state } = first;
      this.slots.release(first.tenant);
      this.queues.done(first);
      state.inFlight--;
      for (const item of finished) state.tracker.complete(item.offset);
      this.dispatch();
      if (this.slots.inFlight === 0 || this.idleWaiters.length > 0) this.notifyIdle();
    }
  }

  /**
   * A key's records in one handler call; if it fails they are handled again one at a time (each
   * with its retries and dead-lettering), in order, stopping at one that is abandoned. Returns
   * the records that finished.
   */
  private async processTogether(group: WorkItem[]): Promise<WorkItem[]> {
    const { state } = group[0];
    const signal = state.abort.signal;
    if (signal.aborted || state.stale) return [];
    try {
      await this.traced(group, 1, () => this.handle!(group, 1, signal));
      if (signal.aborted || state.stale) return []; // cut short (see process)
      this.counters.processed += group.length;
      return group;
    } catch (err) {
      if (signal.aborted || state.stale) return [];
      this.opts.onError?.(err, `a batch of ${group.length} records failed; handling them one at a time`);
    }
    const finished: WorkItem[] = [];
    for (const item of group) {
      if ((await this.process(item)) !== 'done') break;
      finished.push(item);
    }
    return finished;
  }

  /** Each attempt is a span per record, in the trace its producer put in the headers. */
  private traced(items: WorkItem[], attempt: number, fn: () => Promise<void>): Promise<void> {
    const attributes = (item: WorkItem) => ({
      'messaging.consumer.group.name': this.opts.groupId,
      'messaging.destination.partition.id': String(item.state.partition),
      'messaging.kafka.offset': Number(item.message.offset),
      'mesh.attempt': attempt,
      ...(items.length > 1 ? { 'messaging.batch.message_count': items.length } : {}),
    });
    const run = items.reduceRight<() => Promise<void>>(
      (inner, item) => () => withConsumerSpan(item.state.topic, traceCarrier(item), attributes(item), inner),
      fn,
    );
    return run();
  }

  private async process(item: WorkItem): Promise<Outcome> {
    const { state } = item;
    const signal = state.abort.signal;
    if (item.decodeError !== undefined) return this.deadLetter(item, item.decodeError, 0, 'undecodable');
    let counted = 0; // failures that count towards the dead-letter limit
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted || state.stale) return 'abandoned';
      try {
        await this.traced([item], attempt, () => this.handle!([item], attempt, signal));
        // A handler that returns after its signal was aborted (a drain ran out of time, the
        // partition went elsewhere) may have stopped half-way — the agents' turn runner gives its
        // execution up and returns. Not finished, so never committed: the next owner runs it. A
        // commit still queued behind a slow coordinator would otherwise carry it (and, in the
        // commit metadata, tell the next owner to skip it).
        if (signal.aborted || state.stale) return 'abandoned';
        this.counters.processed++;
        return 'done';
      } catch (err) {
        // Cut short by a drain: not finished, so not committed; the next owner gets it again.
        if (signal.aborted || state.stale) return 'abandoned';
        // A database or broker restart says nothing about the message: it is retried (in order, its
        // key held back) for as long as the outage lasts, without using up the attempts that lead to
        // the dead-letter topic (a good command dead-lettered during a Postgres restart is a lost task).
        if (!(this.opts.isTransient ?? isTransientKafkaError)(err)) counted++;
        if (!isRetryable(err)) return this.deadLetter(item, err, attempt, 'not_retryable');
        if (counted >= this.maxAttempts) return this.deadLetter(item, err, attempt, 'attempts_exhausted');
        this.counters.retried++;
        await sleep(this.backoff(attempt), signal);
      }
    }
  }

  private backoff(attempt: number): number {
    const exp = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** (attempt - 1));
    return exp / 2 + Math.random() * (exp / 2);
  }

  /** Sends the record to `{topic}.dlq`, retrying the send itself until it succeeds or the work is dropped. */
  private async deadLetter(item: WorkItem, error: unknown, attempts: number, reason: DeadLetterReason): Promise<Outcome> {
    const { state, message } = item;
    const headers = deadLetterHeaders(normalizeHeaders(message.headers), {
      error,
      attempts,
      topic: state.topic,
      partition: state.partition,
      offset: message.offset,
      groupId: this.opts.groupId,
    });
    for (let attempt = 1; ; attempt++) {
      try {
        await this.producer.sendRecord(deadLetterTopic(state.topic), message.key?.toString() ?? '', message.value, headers);
        this.counters.deadLettered++;
        this.opts.onDeadLetter?.({ topic: state.topic, reason, error });
        return 'done';
      } catch (err) {
        this.opts.onError?.(err, 'dead-letter send');
        if (state.abort.signal.aborted || state.stale) return 'abandoned';
        await sleep(Math.min(this.maxBackoffMs, 500 * attempt), state.abort.signal);
      }
    }
  }

  // ---- backpressure -------------------------------------------------------------------------

  private pause(state: PartitionState): void {
    if (state.paused) return;
    state.paused = true;
    this.pausedCount++;
    this.consumer.pause([{ topic: state.topic, partitions: [state.partition] }]);
  }

  private resumeAll(): void {
    for (const s of this.states.values()) {
      if (!s.paused || s.revoked) continue;
      s.paused = false;
      this.pausedCount--;
      this.consumer.resume([{ topic: s.topic, partitions: [s.partition] }]);
    }
    this.notifyRoom();
  }

  // ---- commits ------------------------------------------------------------------------------

  /**
   * Commits each given state's lowest unfinished offset, with the offsets finished above it as the
   * commit's metadata; commits run one after another.
   */
  private commit(states: PartitionState[]): Promise<void> {
    const run = async () => {
      const todo = states
        .filter((s) => !s.stale)
        .flatMap((s) => {
          const mark = s.pendingCommit(this.metadataChars);
          return mark ? [{ s, mark }] : [];
        });
      if (todo.length === 0) return;
      try {
        await this.consumer.commitOffsets(
          todo.map(({ s, mark }) => ({ topic: s.topic, partition: s.partition, offset: String(mark.offset), metadata: mark.metadata })),
        );
        for (const { s, mark } of todo) s.committedTo(mark);
        this.counters.commits++;
      } catch (err) {
        this.opts.onError?.(err, 'commit');
      }
    };
    this.commitChain = this.commitChain.then(run);
    return this.commitChain;
  }

  // ---- rebalance and shutdown ---------------------------------------------------------------

  /**
   * The group is rebalancing: stop starting work of the current assignment, give running handlers
   * up to the drain timeout, commit what finished, and abort the rest.
   */
  private revokeAll(): Promise<void> {
    this.revoking ??= (async () => {
      this.rejoining = true;
      const olds = [...this.states.values()];
      if (olds.length === 0) return;
      this.counters.rebalances++;
      this.states.clear();
      this.epoch++;
      this.retireStates(olds);
      await this.drain(olds);
    })().finally(() => {
      this.revoking = undefined;
    });
    return this.revoking;
  }

  /** Every state of an earlier epoch becomes stale once the group has a new generation. */
  private onJoined(assignment: Record<string, number[]>): void {
    this.rejoining = false;
    // The group's assignment, not the partitions that have delivered a record since (an idle one has none).
    this.assigned = Object.values(assignment).reduce((n, partitions) => n + partitions.length, 0);
    this.opts.onAssigned?.(assignment);
    if (this.states.size > 0) {
      this.counters.rebalances++;
      const current = [...this.states.values()];
      this.states.clear();
      this.epoch++;
      this.retireStates(current);
    }
    for (const s of this.revoked) {
      s.stale = true;
      if (!s.idle) s.abort.abort(new Error('partition reassigned'));
    }
    this.revoked.clear();
  }

  /** Stops new work of these states: drops their queued messages (they will be fetched again) and unpauses. */
  private retireStates(olds: PartitionState[]): void {
    const set = new Set(olds);
    const dropped = this.queues.removeWaiting((w) => set.has(w.state));
    this.bufferedCount -= dropped.length;
    for (const s of olds) {
      s.revoked = true;
      s.buffered = 0;
      if (s.paused) {
        s.paused = false;
        this.pausedCount--;
        this.consumer.resume([{ topic: s.topic, partitions: [s.partition] }]);
      }
      this.revoked.add(s);
    }
    this.notifyRoom();
  }

  /** Waits up to the drain timeout for the states' handlers, commits what finished, aborts the rest. */
  private async drain(states: PartitionState[]): Promise<void> {
    const deadline = Date.now() + this.drainTimeoutMs;
    while (states.some((s) => !s.idle) && Date.now() < deadline) {
      await this.waitIdle(deadline - Date.now());
    }
    await withTimeout(this.commit(states), Math.max(1000, this.drainTimeoutMs));
    for (const s of states) if (!s.idle) s.abort.abort(new Error('drain timeout'));
  }

  private waitIdle(ms: number): Promise<void> {
    return wakeableSleep(Math.max(1, ms), (wake) => this.idleWaiters.push(wake));
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private async shutdown(): Promise<void> {
    if (this.commitTimer) clearInterval(this.commitTimer);
    if (!this.handle) return;
    // No new fetches; what is queued is dropped (uncommitted, so it is delivered again later).
    try {
      this.consumer.pause(this.opts.topics.map((topic) => ({ topic })));
    } catch {
      // start() failed before kafkajs ran the group: nothing is fetching.
    }
    this.notifyRoom();
    await this.revoking;
    const states = [...this.states.values()];
    const set = new Set(states);
    this.bufferedCount -= this.queues.removeWaiting((w) => set.has(w.state)).length;
    for (const s of states) {
      s.revoked = true;
      s.buffered = 0;
    }
    await this.drain(states);
    await this.consumer.disconnect().catch((err: unknown) => this.opts.onError?.(err, 'disconnect'));
    await this.producer.disconnect();
    await this.admin.close();
  }
}

function isRebalancing(err: unknown): boolean {
  const type = (err as { type?: string } | null)?.type;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'NOT_COORDINATOR_FOR_GROUP' || type === 'ILLEGAL_GENERATION';
}

async function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((resolve) => (t = setTimeout(resolve, ms)))]);
  clearTimeout(t);
}

/** The record's W3C trace context: from its decoded identity, else (undecodable) from its raw headers. */
function traceCarrier(item: WorkItem): Record<string, string | undefined> {
  if (!item.envelope) return normalizeHeaders(item.message.headers);
  const { traceparent, tracestate } = item.envelope.identity;
  return { traceparent, tracestate };
}
