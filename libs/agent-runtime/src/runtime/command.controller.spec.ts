import 'reflect-metadata';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { KafkaBusTransport, type Kafka } from '@mesh/bus';
import { Envelopes, executionId, MeshError, type Envelope, type TaskRunCommand } from '@mesh/contract';
import { AgentsRuntime } from './agents-runtime.js';
import type { AgentWorker } from './agent-worker.js';
import { CommandController } from './command.controller.js';

const run = (taskId: string): TaskRunCommand =>
  Envelopes.run(
    {
      tenant: 'acme',
      agentId: 'a',
      taskId,
      contextId: 'c',
      messageId: 'm',
      executionId: executionId('acme', taskId, 0),
      subject: 's',
      actor: 'x',
    },
    { turn: 0, message: { parts: [] } },
  );

type Handled = { topic: string; kind: string; signal: AbortSignal };

/**
 * The controller bound to a real KafkaBusTransport (never listening: records are handed to its
 * routing directly) over a runtime with one worker per command topic.
 */
async function harness(handle: (env: Envelope) => Promise<void> = async () => undefined) {
  const handled: Handled[] = [];
  const workerOf = (topic: string) =>
    ({
      handle: async (env: Envelope, signal: AbortSignal) => {
        handled.push({ topic, kind: env.kind, signal });
        await handle(env);
      },
    }) as unknown as AgentWorker;
  const workers = new Map([
    ['echo.commands', workerOf('echo.commands')],
    ['refund.commands', workerOf('refund.commands')],
  ]);
  const runtime = { workerFor: (topic: string) => workers.get(topic) } as unknown as AgentsRuntime;
  @Module({ controllers: [CommandController], providers: [{ provide: AgentsRuntime, useValue: runtime }] })
  class CommandsModule {}
  const transport = new KafkaBusTransport({} as Kafka, { groupId: 'g', topics: [] });
  const app = await NestFactory.createMicroservice(CommandsModule, { strategy: transport, logger: false });
  await app.init();
  const deliver = (env: Envelope, topic: string, signal = new AbortController().signal) =>
    (transport as unknown as { route(e: Envelope, ctx: object): Promise<void> }).route(env, {
      topic,
      partition: 0,
      offset: '0',
      key: null,
      attempt: 1,
      signal,
      headers: {},
    });
  return { app, handled, deliver };
}

test('each command reaches the worker of the topic it was read from, with the record revocation signal', async () => {
  const { app, handled, deliver } = await harness();
  try {
    const revoked = new AbortController();
    await deliver(run('t1'), 'refund.commands', revoked.signal);
    await deliver(Envelopes.cancel(run('t1').identity), 'echo.commands');
    assert.deepEqual(
      handled.map((h) => [h.topic, h.kind]),
      [
        ['refund.commands', 'task.run'],
        ['echo.commands', 'task.cancel'],
      ],
    );
    assert.equal(handled[0]!.signal, revoked.signal);
  } finally {
    await app.close();
  }
});

test('a worker error reaches the bus unchanged, so its retryable flag decides retry or dead letter', async () => {
  const refused = new MeshError('NOT_CANCELLABLE', 'no', { retryable: false });
  const { app, deliver } = await harness(async () => {
    throw refused;
  });
  try {
    await assert.rejects(deliver(run('t2'), 'echo.commands'), (err) => err === refused);
  } finally {
    await app.close();
  }
});

test('events on a command topic are ignored; a topic no agent here consumes is refused without retries', async () => {
  const { app, handled, deliver } = await harness();
  try {
    await deliver(Envelopes.status(run('t3').identity, { seq: 0, state: 'TASK_STATE_WORKING', final: false }), 'echo.commands');
    assert.equal(handled.length, 0);
    await assert.rejects(deliver(run('t3'), 'other.commands'), (err: MeshError) => err.code === 'NO_HANDLER' && err.retryable === false);
  } finally {
    await app.close();
  }
});
