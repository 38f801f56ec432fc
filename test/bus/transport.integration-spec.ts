import 'reflect-metadata';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Envelopes, MeshError, normalizeHeaders, type Envelope, type TaskCancelCommand, type TaskRunCommand } from '@mesh/contract';
import {
  BusAdmin,
  BusBatchContext,
  BusContext,
  BusExceptionFilter,
  BusProducer,
  DeadLetterHeaders,
  KafkaBusTransport,
  KEYED_BATCH_PATTERN,
} from '@mesh/bus';
import { eventually, uniquePrefix } from '../support/infra.js';
import { cleanup, runCommand, testKafka, testTopic } from '../support/bus.js';

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

const batches: Array<{ tasks: string[]; turns: number[]; offsets: number[] }> = [];
/** Turn of task-2 that makes every batch holding it fail (non-retryable). */
const POISON_TURN = 3;
const turnOf = (env: Envelope) => (env.kind === 'task.run' ? env.body.turn : -1);

@Controller()
class ProjectorController {
  @EventPattern(KEYED_BATCH_PATTERN)
  async project(@Payload() envelopes: Envelope[], @Ctx() ctx: unknown): Promise<void> {
    if (envelopes.some((e) => e.identity.taskId === 'task-2' && turnOf(e) === POISON_TURN)) {
      throw new MeshError('CONTRACT_VIOLATION', 'a poisoned turn', { retryable: false });
    }
    batches.push({
      tasks: envelopes.map((e) => e.identity.taskId),
      turns: envelopes.map(turnOf),
      offsets: (ctx as BusBatchContext).messages.map((m) => Number(m.offset)),
    });
  }
}

@Module({ controllers: [ProjectorController] })
class ProjectorModule {}

test('batch mode: one handler gets a key’s queued envelopes in order; a failed batch comes back one by one', async () => {
  const topic = `${uniquePrefix('transport-batch')}events`;
  // On the broker before the consumer starts, so each key has records queued behind the first.
  const { producer } = await testTopic(kafka, topic, 2);
  const tasks = 4;
  const perTask = 8;
  const sends: Promise<void>[] = [];
  for (let turn = 0; turn < perTask; turn++) {
    for (let t = 0; t < tasks; t++) sends.push(producer.send(topic, `task-${t}`, runCommand('acme', `task-${t}`, turn)));
  }
  await Promise.all(sends);

  const transport = new KafkaBusTransport(kafka, {
    groupId: `${topic}.projector`,
    topics: [topic],
    fromBeginning: true,
    batches: true,
    maxBatchPerKey: 5,
    retry: { maxAttempts: 3, initialBackoffMs: 10 },
  });
  const app = await NestFactory.createMicroservice(ProjectorModule, { strategy: transport, logger: false });
  app.useGlobalFilters(new BusExceptionFilter());
  cleanup(() => app.close());
  await app.listen();

  const handled = () => batches.reduce((n, b) => n + b.turns.length, 0);
  await eventually('every record but the poisoned one handled', () => handled() === tasks * perTask - 1);
  for (const b of batches) {
    assert.equal(new Set(b.tasks).size, 1, `a batch holds one key (${b.tasks.join(',')})`);
    assert.equal(b.offsets.length, b.turns.length, 'one context per envelope');
    assert.deepEqual(
      b.offsets,
      [...b.offsets].sort((x, y) => x - y),
      'offset order',
    );
  }
  assert.ok(Math.max(...batches.map((b) => b.turns.length)) > 1, 'queued records of a key come together');
  assert.ok(Math.max(...batches.map((b) => b.turns.length)) <= 5, 'never more than maxBatchPerKey');
  for (let t = 0; t < tasks; t++) {
    const turns = batches.filter((b) => b.tasks[0] === `task-${t}`).flatMap((b) => b.turns);
    const expected = [...Array(perTask).keys()].filter((turn) => t !== 2 || turn !== POISON_TURN);
    assert.deepEqual(turns, expected, `task-${t}: each record once, in order`);
  }

  const dead = kafka.consumer({ groupId: `${topic}.dlq-reader` });
  cleanup(() => dead.disconnect());
  const letters: Record<string, string>[] = [];
  await dead.connect();
  await dead.subscribe({ topic: `${topic}.dlq`, fromBeginning: true });
  await dead.run({ eachMessage: async ({ message }) => void letters.push(normalizeHeaders(message.headers)) });
  await eventually('the poisoned record dead-lettered', () => letters.length === 1);
  assert.equal(letters[0][DeadLetterHeaders.errorCode], 'CONTRACT_VIOLATION', 'the MeshError reached the bus through Nest');
  assert.equal(letters[0][DeadLetterHeaders.attempts], '1', 'non-retryable: dead-lettered at its first attempt alone');
  assert.equal(transport.stats()?.processed, tasks * perTask - 1);
  assert.equal(transport.stats()?.deadLettered, 1);
});
