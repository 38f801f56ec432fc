import { after } from 'node:test';
import type { Consumer } from 'kafkajs';
import { BusProducer } from '@mesh/bus';
import {
  decodeEnvelope,
  Envelopes,
  executionId,
  newId,
  TopicNames,
  type JsonObject,
  type TaskEvent,
  type TaskRunCommand,
} from '@mesh/contract';
import { eventually, sql, testRun } from '../support/infra.js';
import { testKafka } from '../support/bus.js';

/** Collects every event on the events topic, by task id. */
export class EventCollector {
  private readonly byTask = new Map<string, TaskEvent[]>();
  private consumer?: Consumer;

  async start(topics: TopicNames): Promise<void> {
    const consumer = testKafka('events').consumer({ groupId: `collector-${newId()}`, maxWaitTimeInMs: 50 });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topic: topics.events(), fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const e = decodeEnvelope({ headers: message.headers, value: message.value }) as TaskEvent;
        const list = this.byTask.get(e.identity.taskId) ?? [];
        list.push(e);
        this.byTask.set(e.identity.taskId, list);
      },
    });
    after(() => consumer.disconnect());
  }

  events(taskId: string): TaskEvent[] {
    return this.byTask.get(taskId) ?? [];
  }

  finals(taskId: string): Array<Extract<TaskEvent, { kind: 'task.status' }>> {
    return this.events(taskId).filter((e): e is Extract<TaskEvent, { kind: 'task.status' }> => e.kind === 'task.status' && e.body.final);
  }

  /** Waits for the `n`-th final status of a task. */
  async final(taskId: string, n = 1, timeoutMs = 30000): Promise<Extract<TaskEvent, { kind: 'task.status' }>> {
    return eventually(`final status #${n} of ${taskId}`, () => this.finals(taskId)[n - 1], timeoutMs);
  }

  artifacts(taskId: string): JsonObject[] {
    return this.events(taskId)
      .filter((e): e is Extract<TaskEvent, { kind: 'task.artifact' }> => e.kind === 'task.artifact')
      .map((e) => e.body.artifact);
  }
}

/** A producer for commands, disconnected when the spec ends. */
export async function commandProducer(): Promise<BusProducer> {
  const p = new BusProducer(testKafka('commands'));
  await p.connect();
  after(() => p.disconnect());
  return p;
}

/** A task.run command of `agentId` with a text (or data) message. */
export function runTask(
  agentId: string,
  tenant: string,
  message: string | JsonObject,
  opts: { taskId?: string; turn?: number; deadlineUnixMs?: number } = {},
): TaskRunCommand {
  const taskId = opts.taskId ?? newId();
  const turn = opts.turn ?? 0;
  const parts = typeof message === 'string' ? [{ text: message }] : [{ data: message }];
  return Envelopes.run(
    {
      tenant,
      agentId,
      taskId,
      contextId: `ctx-${taskId}`,
      messageId: newId(),
      executionId: executionId(tenant, taskId, turn),
      subject: 'alice',
      actor: 'test-client',
      ...(opts.deadlineUnixMs !== undefined ? { deadlineUnixMs: opts.deadlineUnixMs } : {}),
    },
    { turn, message: { messageId: newId(), role: 'ROLE_USER', parts } },
  );
}

/** Sends a command on the agent's channel (default key `{tenant}:{agent_id}`). */
export async function sendCommand(producer: BusProducer, topics: TopicNames, cmd: Parameters<BusProducer['send']>[2]): Promise<void> {
  await producer.send(topics.commands(cmd.identity.agentId), `${cmd.identity.tenant}:${cmd.identity.agentId}`, cmd);
}

/** Adds a demo invoice charged twice, so each test refunds its own invoice. */
export async function addDuplicateInvoice(url: string, tenant: string, invoiceId: string, amountCents = 5000): Promise<void> {
  await sql(
    url,
    `INSERT INTO billing.invoices (tenant, invoice_id, customer, amount_cents, currency, charges) VALUES ($1, $2, 'Test Customer', $3, 'EUR', 2)`,
    [tenant, invoiceId, amountCents],
  );
}

export { testRun };
