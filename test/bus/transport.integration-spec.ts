import 'reflect-metadata';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Envelopes, MeshError, normalizeHeaders, type TaskCancelCommand, type TaskRunCommand } from '@mesh/contract';
import { BusAdmin, BusContext, BusExceptionFilter, BusProducer, DeadLetterHeaders, KafkaBusTransport } from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka } from '../support/bus.js';

const kafka = testKafka('transport');
const received: Array<{ task: string; offset: string }> = [];

@Controller()
class WorkerController {
  @EventPattern('task.run')
  // Nest 12 types the extra handler arguments as unknown.
  async run(@Payload() env: TaskRunCommand, @Ctx() ctx: unknown): Promise<void> {
    received.push({ task: env.identity.taskId, offset: (ctx as BusContext).message.offset });
  }

  @EventPattern('task.cancel')
  async cancel(@Payload() env: TaskCancelCommand): Promise<void> {
    throw new MeshError('NOT_CANCELLABLE', `task ${env.identity.taskId} cannot be cancelled`, { retryable: false });
  }
}

@Module({ controllers: [WorkerController] })
class WorkerModule {}

test('@EventPattern handlers receive envelopes; their non-retryable errors reach the DLQ unchanged', async () => {
  const topic = `${uniquePrefix('transport')}commands`;
  const admin = new BusAdmin(kafka);
  cleanup(() => admin.close());
  await admin.ensureTopic(topic, { partitions: 2 });
  const transport = new KafkaBusTransport(kafka, {
    groupId: `${topic}.workers`,
    topics: [topic],
    fromBeginning: true,
    retry: { maxAttempts: 5, initialBackoffMs: 10 },
  });
  const app = await NestFactory.createMicroservice(WorkerModule, { strategy: transport, logger: false });
  app.useGlobalFilters(new BusExceptionFilter());
  cleanup(() => app.close());
  await app.listen();

  const producer = new BusProducer(kafka);
  cleanup(() => producer.disconnect());
  const run = runCommand('acme', 'task-1', 0);
  await producer.send(topic, 'acme:echo', run);
  await producer.send(topic, 'acme:echo', Envelopes.cancel(run.identity, { reason: 'user' }));
  // No @EventPattern('task.status') handler in this app.
  await producer.send(topic, 'acme:echo', Envelopes.status(run.identity, { seq: 0, state: 'TASK_STATE_WORKING', final: false }));
  await eventually('task.run handled', () => received.some((r) => r.task === 'task-1'));
  assert.match(received[0].offset, /^\d+$/);

  const dead = kafka.consumer({ groupId: `${topic}.dlq-reader` });
  cleanup(() => dead.disconnect());
  const letters: Record<string, string>[] = [];
  await dead.connect();
  await dead.subscribe({ topic: `${topic}.dlq`, fromBeginning: true });
  await dead.run({ eachMessage: async ({ message }) => void letters.push(normalizeHeaders(message.headers)) });
  await eventually('cancel and status dead-lettered', () => letters.length === 2);
  const byKind = new Map(letters.map((l) => [l.kind, l]));
  assert.equal(byKind.get('task.cancel')?.[DeadLetterHeaders.errorCode], 'NOT_CANCELLABLE');
  assert.equal(byKind.get('task.cancel')?.[DeadLetterHeaders.attempts], '1', 'the MeshError kept retryable=false through Nest');
  assert.equal(byKind.get('task.status')?.[DeadLetterHeaders.errorCode], 'NO_HANDLER', 'a kind without a handler is dead-lettered');
  assert.equal(byKind.get('task.status')?.[DeadLetterHeaders.attempts], '1');
  assert.equal(transport.stats()?.deadLettered, 2);
});
