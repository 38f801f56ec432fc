import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '@mesh/telemetry';
import { LedgerRetention } from './ledger-retention.js';

const none = { tasks: 0, executions: 0, effects: 0, cancellations: 0 };

test('a failed sweep is logged and tried again at the next tick', async () => {
  const logs: Array<Record<string, unknown>> = [];
  let calls = 0;
  const sql = {
    query: async () => {
      calls++;
      if (calls === 1) throw new Error('terminating connection due to administrator command');
      return [none];
    },
  };
  const logger = createLogger('agents', 'info', { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const retention = new LedgerRetention(sql, { retentionMs: 1000, sweepMs: 5, logger });
  retention.start();
  for (let i = 0; i < 100 && calls < 2; i++) await new Promise((r) => setTimeout(r, 5));
  await retention.stop();
  assert.ok(calls >= 2, 'swept again after the failure');
  assert.equal(logs[0]?.level, 'warn');
  assert.equal(logs[0]?.src, 'ledger-retention');
  assert.match(String(logs[0]?.error), /administrator command/);
});

test('a retention of 0 keeps everything: no sweep runs', async () => {
  let calls = 0;
  const retention = new LedgerRetention({ query: async () => (calls++, [none]) }, { retentionMs: 0, sweepMs: 1 });
  retention.start();
  await new Promise((r) => setTimeout(r, 20));
  await retention.stop();
  assert.equal(calls, 0);
});
