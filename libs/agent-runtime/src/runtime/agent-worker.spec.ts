import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent } from '@mesh/agent-sdk';
import { Envelopes, executionId, TopicNames, type TaskCancelCommand, type TaskEvent, type TaskRunCommand } from '@mesh/contract';
import { AgentWorker } from './agent-worker.js';
import { InMemoryExecutionLedger } from './execution-ledger.js';
import { TurnRunner } from './turn-runner.js';

const run = (tenant: string, taskId: string): TaskRunCommand =>
  Envelopes.run(
    { tenant, agentId: 'a', taskId, contextId: 'c', messageId: 'm', executionId: executionId(tenant, taskId, 0), subject: 's', actor: 'x' },
    { turn: 0, message: { parts: [] } },
  );

/** A runner whose turns last until released or canceled. */
function fakeRunner() {
  const started: string[] = [];
  const canceledAtStart: string[] = [];
  const releases = new Map<string, () => void>();
  const recorded: string[] = [];
  const runner = {
    recordCancel: async (cmd: TaskCancelCommand) => {
      recorded.push(cmd.identity.executionId);
    },
    run: (cmd: TaskRunCommand, cancel: AbortSignal) =>
      new Promise<void>((resolve) => {
        started.push(cmd.identity.taskId);
        if (cancel.aborted) {
          canceledAtStart.push(cmd.identity.taskId);
          return resolve();
        }
        releases.set(cmd.identity.taskId, resolve);
        cancel.addEventListener('abort', () => resolve());
      }),
  } as unknown as TurnRunner;
  return { runner, started, canceledAtStart, recorded, release: (id: string) => releases.get(id)!() };
}

const tick = () => new Promise((r) => setTimeout(r, 10));

test('a cancel reaches a run still waiting for a slot, and one that runs', async () => {
  const { runner, started, canceledAtStart, release } = fakeRunner();
  const worker = new AgentWorker('a', runner, 1);
  const a1 = worker.handle(run('acme', 'a1'));
  const a2 = worker.handle(run('acme', 'a2'));
  await tick();
  assert.deepEqual(started, ['a1']);
  // a2 waits for the one slot; its cancel is handled at once and reaches it while it waits.
  await worker.handle(Envelopes.cancel(run('acme', 'a2').identity));
  release('a1');
  await a1;
  await a2;
  assert.deepEqual(started, ['a1', 'a2']);
  assert.deepEqual(canceledAtStart, ['a2']);
  // A cancel of a running turn aborts it.
  const g1 = worker.handle(run('globex', 'g1'));
  await tick();
  await worker.handle(Envelopes.cancel(run('globex', 'g1').identity));
  await g1;
  assert.equal(worker.inFlight, 0);
});

test('every cancel is recorded, running here or not; a failed record rejects so the bus delivers the cancel again', async () => {
  const { runner, recorded } = fakeRunner();
  const worker = new AgentWorker('a', runner, 10);
  const running = worker.handle(run('acme', 'r1'));
  await tick();
  await worker.handle(Envelopes.cancel(run('acme', 'r1').identity));
  await running;
  await worker.handle(Envelopes.cancel(run('acme', 'not-here').identity));
  assert.deepEqual(recorded, [executionId('acme', 'r1', 0), executionId('acme', 'not-here', 0)]);

  runner.recordCancel = async () => {
    throw new Error('connection terminated');
  };
  await assert.rejects(worker.handle(Envelopes.cancel(run('acme', 'r2').identity)), /connection terminated/);
});

test('a cancel read by one worker process stops the run read later by another (the first one died or lost the partition)', async () => {
  const ledger = new InMemoryExecutionLedger();
  let called = 0;
  const agent = defineAgent({
    id: 'a',
    card: { name: 'A' },
    handler: async (_t, ctx) => {
      called++;
      return ctx.complete('refunded');
    },
  });
  const sent: TaskEvent[] = [];
  const runnerOf = (workerId: string) =>
    new TurnRunner({
      agent,
      ledger,
      tools: { call: async () => assert.fail('no tool expected'), awaitOutcome: async () => undefined },
      effects: { sideEffectsOf: async () => [] },
      sink: { send: async (_topic, _key, e) => void sent.push(e as TaskEvent) },
      topics: new TopicNames('unit.'),
      workerId,
      leaseMs: 5000,
      unknownWaitMs: 1000,
      retryBudget: 0,
    });
  const first = new AgentWorker('a', runnerOf('w1'), 10);
  const second = new AgentWorker('a', runnerOf('w2'), 10);
  await first.handle(Envelopes.cancel(run('acme', 'late-run').identity, { reason: 'caller gave up' }));
  await second.handle(run('acme', 'late-run'));
  assert.equal(called, 0, 'the handler never ran');
  assert.deepEqual(
    sent.map((e) => (e.kind === 'task.status' ? e.body.state : e.kind)),
    ['TASK_STATE_CANCELED'],
  );
});
