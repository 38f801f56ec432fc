import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Envelopes, executionId, type TaskRunCommand } from '@mesh/contract';
import { AgentWorker } from './agent-worker.js';
import type { TurnRunner } from './turn-runner.js';

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
  const runner = {
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
  return { runner, started, canceledAtStart, release: (id: string) => releases.get(id)!() };
}

const noSource = { start: async () => undefined, stop: async () => undefined };
const tick = () => new Promise((r) => setTimeout(r, 10));

test('a tenant at its limit waits while other tenants run; a cancel is never held back by the limit', async () => {
  const { runner, started, canceledAtStart, release } = fakeRunner();
  const worker = new AgentWorker('a', noSource, runner, 10, 1);
  const a1 = worker.handle(run('acme', 'a1'));
  const a2 = worker.handle(run('acme', 'a2'));
  const g1 = worker.handle(run('globex', 'g1'));
  await tick();
  assert.deepEqual(started, ['a1', 'g1']);
  assert.equal(worker.tenantInFlight('acme'), 1);
  // a2 waits for acme's slot; its cancel is handled at once and reaches it while it waits.
  await worker.handle(Envelopes.cancel(run('acme', 'a2').identity));
  release('a1');
  await a1;
  await a2;
  assert.deepEqual(started, ['a1', 'g1', 'a2']);
  assert.deepEqual(canceledAtStart, ['a2']);
  // A cancel of a running turn aborts it.
  await worker.handle(Envelopes.cancel(run('globex', 'g1').identity));
  await g1;
  assert.equal(worker.inFlight, 0);
});
