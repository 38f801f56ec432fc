import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isLedgerTaskState, LEDGER_TASK_STATES } from '@mesh/contract';
import { CliError } from '../cli-error.js';
import { checkFilter, FILTER_STATES } from './overview.js';

const refused = (f: Parameters<typeof checkFilter>[0], ops: boolean, message: RegExp) =>
  assert.throws(
    () => checkFilter(f, ops),
    (err: unknown) => err instanceof CliError && message.test(err.message),
  );

test('without a tenant every A2A state filters the dispatcher task list; running needs a tenant', () => {
  for (const state of FILTER_STATES.filter((s) => s !== 'running')) checkFilter({ state }, false);
  refused({ state: 'running' }, true, /state running is a ledger view: give a tenant too/);
  refused({ state: 'bogus' }, true, /unknown state bogus; valid states: .*input-required/);
});

test('with a tenant the filter reads the ledgers: only their states pass, each named when refused', () => {
  for (const state of LEDGER_TASK_STATES) checkFilter({ tenant: 'acme', state }, true);
  // States only the dispatcher knows: the ledgers hold a task's latest turn, never submitted or working.
  const dispatcherOnly = FILTER_STATES.filter((s) => !isLedgerTaskState(s));
  assert.deepEqual(dispatcherOnly.sort(), ['submitted', 'working']);
  for (const state of dispatcherOnly)
    refused(
      { tenant: 'acme', state },
      true,
      new RegExp(`state ${state} is not in the ledgers .*valid states with a tenant: running, completed`),
    );
  refused({ tenant: 'acme' }, false, /start the console with an ops token/);
});
