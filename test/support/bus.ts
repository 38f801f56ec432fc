import { after } from 'node:test';
import type { Kafka } from 'kafkajs';
import { Envelopes, type Identity, type TaskRunCommand } from '@mesh/contract';
import { BusAdmin, BusProducer, createKafka, type BusProducerOptions } from '@mesh/bus';
import { testRun } from './infra.js';

/** A kafkajs client on the test broker; `label` names it in broker logs. */
export function testKafka(label: string): Kafka {
  return createKafka({ brokers: testRun().brokers, clientId: `test-${label}` });
}

/** A task.run command for `taskId` whose turn carries a sequence number, so tests can check order. */
export function runCommand(tenant: string, taskId: string, seq: number, extra: Partial<Identity> = {}): TaskRunCommand {
  return Envelopes.run(
    {
      tenant,
      agentId: 'echo',
      taskId,
      contextId: `ctx-${taskId}`,
      messageId: `${taskId}-${seq}`,
      executionId: `${tenant}:${taskId}:${seq}`,
      subject: 'user-1',
      actor: 'client-1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      ...extra,
    },
    { turn: seq, message: { role: 'user', parts: [{ kind: 'text', text: `msg ${seq}` }] } },
  );
}

/** Registers a cleanup to run when the spec file ends (closing clients even when a test failed). */
export function cleanup(fn: () => Promise<unknown>): void {
  after(async () => {
    await fn().catch(() => undefined);
  });
}

/**
 * Creates `topic` with `partitions` and returns an admin and a producer for it; both are closed
 * when the spec file ends.
 */
export async function testTopic(
  kafka: Kafka,
  topic: string,
  partitions: number,
  producerOptions?: BusProducerOptions,
): Promise<{ admin: BusAdmin; producer: BusProducer }> {
  const admin = new BusAdmin(kafka);
  cleanup(() => admin.close());
  await admin.ensureTopic(topic, { partitions });
  const producer = new BusProducer(kafka, producerOptions);
  cleanup(() => producer.disconnect());
  return { admin, producer };
}
