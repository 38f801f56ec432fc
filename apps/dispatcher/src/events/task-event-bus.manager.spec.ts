import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import { TaskEventBusManager } from './task-event-bus.manager.js';

const status = (taskId: string) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId: 'c',
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
    metadata: undefined,
  });

test('events reach the listeners of their task only; the bus goes away with its last listener', async () => {
  const m = new TaskEventBusManager();
  const a: AgentExecutionEvent[] = [];
  const b: AgentExecutionEvent[] = [];
  const offA = await m.subscribe('t1', (e) => a.push(e));
  const offB = await m.subscribe('t2', (e) => b.push(e));
  m.publish('t1', status('t1'));
  m.publish('t3', status('t3')); // nobody listens: dropped, no bus created
  assert.equal(a.length, 1);
  assert.equal(b.length, 0);
  assert.equal(m.getByTaskId('t3'), undefined);
  offA();
  offA(); // idempotent
  assert.equal(m.getByTaskId('t1'), undefined);
  assert.ok(m.getByTaskId('t2'));
  offB();
  assert.equal(m.getByTaskId('t2'), undefined);
});

test('the manager owns settling: the SDK handler never finishes a bus fed by Kafka', () => {
  const m = new TaskEventBusManager();
  const bus = m.createOrGetByTaskId('t');
  assert.equal(m.settleByTaskId('t', bus, undefined, undefined as never), true);
  assert.equal(m.createOrGetByTaskId('t'), bus);
  m.cleanupByTaskId('t');
  assert.equal(m.getByTaskId('t'), undefined);
});

test('the first follower wakes the feed before its subscription resolves; the last one to leave lets it rest', async () => {
  const m = new TaskEventBusManager();
  const calls: string[] = [];
  let release!: () => void;
  m.feedFrom({
    wake: () => {
      calls.push('wake');
      // The first wake takes a while (the feed resumes); later ones find it awake.
      return calls.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
    },
    idle: () => void calls.push('idle'),
  });
  let subscribed = false;
  const pending = m
    .subscribe('t1', () => undefined)
    .then((off) => {
      subscribed = true;
      return off;
    });
  await new Promise((r) => setImmediate(r));
  assert.equal(subscribed, false, 'a follower must not read its snapshot before the feed is awake');
  release();
  const offA = await pending;
  const offB = await m.subscribe('t2', () => undefined);
  assert.deepEqual(calls, ['wake', 'wake']);
  offA();
  assert.deepEqual(calls, ['wake', 'wake'], 'another task is still followed');
  offB();
  offB();
  assert.deepEqual(calls, ['wake', 'wake', 'idle']);
});
