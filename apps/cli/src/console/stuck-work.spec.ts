import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stuckWorkWarnings } from './stuck-work.js';

const now = Date.parse('2026-01-01T12:00:00Z');

test('lag with no consumer is flagged per agent', () => {
  const w = stuckWorkWarnings({ now, startTimeoutMs: 0, lagWithoutConsumer: [{ agent: 'a', lag: 3 }], submitted: [] });
  assert.deepEqual(
    w.map((x) => [x.kind, x.agent]),
    [['lag-without-consumer', 'a']],
  );
  assert.match(w[0]!.text, /3 command\(s\) wait/);
});

test('a submitted task is flagged only once its start-by time passed, and not when the timeout is off', () => {
  const submitted = [
    { agent: 'a', id: 'late', state: 'submitted', updated: '2026-01-01T11:00:00Z' },
    { agent: 'a', id: 'fresh', state: 'submitted', updated: '2026-01-01T11:59:30Z' },
    { agent: 'a', id: 'working', state: 'working', updated: '2026-01-01T10:00:00Z' },
    { agent: 'a', id: 'no-time', state: 'submitted', updated: '' },
  ];
  const w = stuckWorkWarnings({ now, startTimeoutMs: 60_000, lagWithoutConsumer: [], submitted });
  assert.deepEqual(
    w.map((x) => [x.kind, x.taskId]),
    [['past-start-by', 'late']],
  );
  assert.match(w[0]!.text, /2026-01-01T11:01:00.000Z/);
  assert.deepEqual(stuckWorkWarnings({ now, startTimeoutMs: 0, lagWithoutConsumer: [], submitted }), []);
});
