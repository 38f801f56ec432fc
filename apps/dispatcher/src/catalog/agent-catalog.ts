import type { Kafka } from 'kafkajs';
import { canSee, newId, type AgentRecord } from '@mesh/contract';
import { ensureTopic, runConsumer, type RunningConsumer } from '../kafka/kafka.adapter.js';

/** Where agents come from: the directory's live records. */
export interface AgentLookup {
  /** The agent as `tenant` may use it: undefined when unknown, retired or not visible to it. */
  resolve(agentId: string, tenant: string | undefined): AgentRecord | undefined;
  /** Any record, visible or not (internal use: partitions of a command topic). */
  get(agentId: string): AgentRecord | undefined;
}

/** In-memory lookup (unit tests, demo). */
export class InMemoryAgentCatalog implements AgentLookup {
  protected readonly records = new Map<string, AgentRecord>();

  put(record: AgentRecord): void {
    const current = this.records.get(record.id);
    // Compaction can replay an older value after a newer one was seen: keep the highest version.
    if (current && current.version > record.version) return;
    this.records.set(record.id, record);
  }

  remove(agentId: string): void {
    this.records.delete(agentId);
  }

  get(agentId: string): AgentRecord | undefined {
    return this.records.get(agentId);
  }

  resolve(agentId: string, tenant: string | undefined): AgentRecord | undefined {
    const r = this.records.get(agentId);
    if (!r || r.retired) return undefined;
    if (tenant === undefined) return r.visibility === 'public' ? r : undefined;
    return canSee(r, tenant) ? r : undefined;
  }
}

/**
 * Live cache of the directory's compacted cards topic (key: agent id, value: AgentRecord JSON,
 * null value: deleted). Every replica reads the whole topic from the beginning under its own
 * group, so each holds the full catalog; `start` resolves once the backlog present at start-up
 * has been read.
 */
export class KafkaAgentCatalog extends InMemoryAgentCatalog {
  private consumer?: RunningConsumer;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
  ) {
    super();
  }

  async start(timeoutMs = 15000): Promise<void> {
    await ensureTopic(this.kafka, this.topic, 1, [{ name: 'cleanup.policy', value: 'compact' }]);
    const admin = this.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(this.topic).finally(() => admin.disconnect());
    const pending = new Map(offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high) - 1n]));
    let caughtUp!: () => void;
    const ready = new Promise<void>((r) => (caughtUp = r));
    if (pending.size === 0) caughtUp();
    this.consumer = await runConsumer(
      this.kafka,
      { groupId: `dispatcher-catalog-${newId()}`, topic: this.topic, fromBeginning: true },
      async ({ partition, message }) => {
        this.apply(message.key?.toString('utf8'), message.value);
        const target = pending.get(partition);
        if (target !== undefined && BigInt(message.offset) >= target) {
          pending.delete(partition);
          if (pending.size === 0) caughtUp();
        }
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`agent catalog did not catch up with ${this.topic} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Applies one record of the topic; malformed values are skipped with a log line. */
  apply(key: string | undefined, value: Buffer | null): void {
    if (value === null) {
      // Tombstone: the key is the agent id (or `{tenant}/{agentId}`; the id is the last segment).
      if (key) this.remove(key.split('/').pop()!);
      return;
    }
    try {
      const record = JSON.parse(value.toString('utf8')) as AgentRecord;
      if (typeof record?.id !== 'string' || typeof record.tenant !== 'string' || typeof record.card !== 'object') {
        throw new Error('not an AgentRecord');
      }
      this.put(record);
    } catch (err) {
      process.stderr.write(
        `${JSON.stringify({ level: 'warn', src: 'catalog', msg: 'skipped malformed agent record', key, err: String(err) })}\n`,
      );
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
