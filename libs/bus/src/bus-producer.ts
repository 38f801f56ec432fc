import type { Kafka, Message, PartitionerArgs, Producer, RecordMetadata, TopicMessages } from 'kafkajs';
import { encodeEnvelope, MeshError, type Envelope } from '@mesh/contract';
import { startProducerSpans, untracedProducer } from '@mesh/telemetry';
import { keyPartitioner } from './key-partitioner.js';

/** Options of {@link BusProducer}. */
export interface BusProducerOptions {
  /** How long a send waits for company before its batch goes out (default 2 ms). */
  lingerMs?: number;
  /**
   * Upper bound of one request's payload. Kafka limits one record batch (all records of a request
   * for one partition) to max.message.bytes, 1 MiB by default, so stay below that.
   */
  maxBatchBytes?: number;
  /**
   * Retries of one request (default 8, with backoff up to 5 s). kafkajs would retry an idempotent
   * producer forever, which turns a missing topic into a hang instead of an error.
   */
  retries?: number;
  /**
   * One PRODUCER span per record, continuing the trace in the record's own headers (default false:
   * kafkajs' instrumentation parents a whole request on the context it was sent from). For a
   * producer whose batches carry records of many requests, as the dispatcher's outbox relay does.
   */
  spanPerRecord?: boolean;
}

interface Pending {
  topic: string;
  message: Message;
  bytes: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Idempotent, acks=all producer with linger batching: sends issued close together are coalesced
 * into one `sendBatch`, and each send resolves only when the broker acknowledged its batch.
 * One request is in flight at a time; the next batch fills up meanwhile. (kafkajs assigns
 * idempotent sequence numbers per request, so overlapping requests would buy nothing.)
 */
export class BusProducer {
  private readonly producer: Producer;
  private readonly lingerMs: number;
  private readonly maxBatchBytes: number;
  private queue: Pending[] = [];
  private queuedBytes = 0;
  private timer?: NodeJS.Timeout | NodeJS.Immediate;
  private inFlight?: Promise<void>;
  private connected?: Promise<void>;
  private closed = false;
  private readonly spanPerRecord: boolean;
  private readonly retries: number;
  /** The partition kafkajs' partitioner chose for each record (read back against the acknowledgement). */
  private readonly partitionOf = new WeakMap<Message, number>();
  /** Requests sent, records acknowledged, records sent again because no acknowledgement covered them. */
  readonly counters = { requests: 0, records: 0, failures: 0, unacknowledged: 0 };

  constructor(kafka: Kafka, opts: BusProducerOptions = {}) {
    this.lingerMs = opts.lingerMs ?? 2;
    this.maxBatchBytes = opts.maxBatchBytes ?? 900 * 1024;
    this.spanPerRecord = opts.spanPerRecord ?? false;
    this.retries = opts.retries ?? 8;
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      retry: { retries: this.retries, initialRetryTime: 100, maxRetryTime: 5000 },
      createPartitioner: recordingPartitioner(this.partitionOf),
    });
    this.producer = this.spanPerRecord ? untracedProducer(producer) : producer;
  }

  async connect(): Promise<void> {
    this.connected ??= this.producer.connect().catch((err: unknown) => {
      this.connected = undefined;
      throw err;
    });
    await this.connected;
  }

  /** Produces one envelope with all contract headers; resolves once the broker acknowledged it. */
  send(topic: string, key: string, envelope: Envelope): Promise<void> {
    const wire = encodeEnvelope(envelope);
    return this.enqueue(topic, { key, value: wire.value, headers: wire.headers });
  }

  /** Produces a record that is not an envelope (card records, heartbeats; `null` is a tombstone). */
  sendRecord(topic: string, key: string, value: Buffer | string | null, headers?: Record<string, string>): Promise<void> {
    return this.enqueue(topic, { key, value, ...(headers ? { headers } : {}) });
  }

  private enqueue(topic: string, message: Message): Promise<void> {
    if (this.closed) return Promise.reject(new MeshError('UNAVAILABLE', 'producer is disconnected'));
    return new Promise<void>((resolve, reject) => {
      const bytes = approxSize(message);
      this.queue.push({ topic, message, bytes, resolve, reject });
      this.queuedBytes += bytes;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight) return; // the request's completion flushes what accumulated
    if (this.queuedBytes >= this.maxBatchBytes) {
      this.clearTimer();
      this.flush();
      return;
    }
    if (this.timer) return;
    const go = () => {
      this.timer = undefined;
      this.flush();
    };
    this.timer = this.lingerMs > 0 ? setTimeout(go, this.lingerMs) : setImmediate(go);
  }

  private clearTimer(): void {
    if (!this.timer) return;
    clearTimeout(this.timer as NodeJS.Timeout);
    clearImmediate(this.timer as NodeJS.Immediate);
    this.timer = undefined;
  }

  private flush(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && (batch.length === 0 || bytes + this.queue[0].bytes <= this.maxBatchBytes)) {
      const p = this.queue.shift()!;
      bytes += p.bytes;
      batch.push(p);
    }
    this.queuedBytes -= bytes;
    const spans = this.spanPerRecord ? startProducerSpans(batch.map(spanned)) : undefined;
    const sent = batch.map((p, i) => (spans ? { ...p, message: { ...p.message, headers: spans.messages[i].headers } } : p));
    this.inFlight = (async () => {
      let open = sent;
      try {
        await this.connect();
        for (let round = 0; open.length > 0; round++) {
          if (round > this.retries)
            throw new MeshError('UNAVAILABLE', `${open.length} records were never acknowledged by their partition's leader`, {
              retryable: true,
            });
          const acked = await this.producer.sendBatch({ topicMessages: byTopic(open), acks: -1 });
          this.counters.requests++;
          const rest = this.unacknowledged(open, acked);
          const pending = new Set(rest);
          for (const p of open) if (!pending.has(p)) p.resolve();
          this.counters.records += open.length - rest.length;
          this.counters.unacknowledged += rest.length;
          open = rest;
        }
        spans?.end();
      } catch (err) {
        spans?.end(err);
        this.counters.failures++;
        for (const p of open) p.reject(err);
      } finally {
        this.inFlight = undefined;
        if (this.queue.length > 0) this.flush();
      }
    })();
  }

  /**
   * The records of `sent` whose partition is missing from the acknowledgement. kafkajs (2.2.x) can
   * resolve a sendBatch without having written some of it: when a partition's leader dies and
   * leadership moves to a broker that already answered for other partitions of the request, the
   * retry skips that broker, and the moved partition's records are never sent. Sending them again
   * (before anything else goes out, in order) keeps them and their order; if the dead leader had
   * written them after all, the idempotent sequence makes the new leader take them only once.
   */
  private unacknowledged(sent: readonly Pending[], acked: readonly RecordMetadata[]): Pending[] {
    const ok = new Set(acked.filter((r) => r.errorCode === 0).map((r) => `${r.partition}\u0000${r.topicName}`));
    return sent.filter((p) => {
      const partition = this.partitionOf.get(p.message);
      return partition === undefined || !ok.has(`${partition}\u0000${p.topic}`);
    });
  }

  /** Nest lifecycle hook, so an instance registered as a provider flushes and disconnects on shutdown. */
  onModuleDestroy(): Promise<void> {
    return this.disconnect();
  }

  /** Sends what is queued, waits for its acknowledgement, then closes the connection. */
  async disconnect(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    while (this.inFlight || this.queue.length > 0) {
      if (!this.inFlight) this.flush();
      await this.inFlight?.catch(() => undefined);
    }
    if (this.connected) await this.producer.disconnect().catch(() => undefined);
    this.connected = undefined;
  }
}

/** Pending records as one sendBatch's topic messages, in their order. */
function byTopic(pending: readonly Pending[]): TopicMessages[] {
  const topics = new Map<string, Message[]>();
  for (const p of pending) {
    let list = topics.get(p.topic);
    if (!list) topics.set(p.topic, (list = []));
    list.push(p.message);
  }
  return [...topics].map(([topic, messages]) => ({ topic, messages }));
}

/** Kafka's default partitioning (keys map to partitions as before), remembering each record's choice. */
function recordingPartitioner(chosen: WeakMap<Message, number>) {
  return () => {
    const partition = keyPartitioner();
    return (args: PartitionerArgs) => {
      const p = partition(args);
      chosen.set(args.message, p);
      return p;
    };
  };
}

/** A pending record as `startProducerSpans` reads it (its headers as strings). */
function spanned(p: Pending): { topic: string; key?: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.message.headers ?? {})) if (v !== undefined) headers[k] = String(v);
  return { topic: p.topic, ...(p.message.key != null ? { key: String(p.message.key) } : {}), headers };
}

function approxSize(m: Message): number {
  let n = 64 + (m.key ? Buffer.byteLength(m.key as string | Buffer) : 0);
  if (m.value) n += typeof m.value === 'string' ? Buffer.byteLength(m.value) : m.value.length;
  for (const [k, v] of Object.entries(m.headers ?? {})) n += k.length + (typeof v === 'string' ? v.length : 16) + 8;
  return n;
}
