import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent, type AgentHandler, type ToolObservation } from '@mesh/agent-sdk';
import { Envelopes, executionId, FIRST_TURN, TopicNames, type Envelope, type TaskEvent, type TaskRunCommand } from '@mesh/contract';
import { InMemoryExecutionLedger } from './execution-ledger.js';
import { TurnRunner, type SideEffectReader, type ToolCaller } from './turn-runner.js';

class Sink {
  readonly sent: TaskEvent[] = [];
  async send(_topic: string, _key: string, e: Envelope): Promise<void> {
    this.sent.push(e as TaskEvent);
  }
}

function setup(
  handler: AgentHandler,
  tools: Pick<ToolCaller, 'call'> = { call: async () => assert.fail('no tool expected') },
  leaseMs = 5000,
  reconciler: { waitFor: ToolCaller['awaitOutcome'] } = { waitFor: async () => undefined },
  effects: SideEffectReader = { sideEffectsOf: async () => [] },
) {
  const ledger = new InMemoryExecutionLedger();
  const sink = new Sink();
  const agent = defineAgent({ id: 'unit-agent', card: { name: 'Unit' }, handler });
  const runner = new TurnRunner({
    agent,
    ledger,
    // The gateway's waits for unknown outcomes, given apart here.
    tools: { call: (intent, scope) => tools.call(intent, scope), awaitOutcome: (key, signal) => reconciler.waitFor(key, signal) },
    effects,
    sink,
    topics: new TopicNames('unit.'),
    workerId: 'w1',
    leaseMs,
    unknownWaitMs: 1000,
    retryBudget: 2,
  });
  return { ledger, sink, runner };
}

function cmd(text: string, turn = FIRST_TURN, taskId = 't1', deadlineUnixMs?: number): TaskRunCommand {
  return Envelopes.run(
    {
      tenant: 'acme',
      agentId: 'unit-agent',
      taskId,
      contextId: 'c1',
      messageId: `m${turn}`,
      executionId: executionId('acme', taskId, turn),
      subject: 'alice',
      actor: 'client',
      ...(deadlineUnixMs ? { deadlineUnixMs } : {}),
    },
    { turn, message: { role: 'ROLE_USER', parts: [{ kind: 'text', text }] } },
  );
}

const never = new AbortController().signal;
const states = (events: TaskEvent[]) => events.map((e) => (e.kind === 'task.status' ? e.body.state : 'artifact'));

test('a handler that throws fails the task with its message', async () => {
  const { sink, runner } = setup(async () => {
    throw new Error('boom');
  });
  await runner.run(cmd('x'), never);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_FAILED']);
  const final = sink.sent[1];
  assert.match(JSON.stringify(final.body), /boom/);
});

test('a finished execution is re-emitted, not run again; history carries earlier turns', async () => {
  let runs = 0;
  const { sink, runner } = setup(async (task, ctx) => {
    runs++;
    if (task.turn === FIRST_TURN) return ctx.askForInput('which one?');
    assert.equal(task.history.length, 2, 'user message and the question of the first turn');
    assert.equal(task.history[1].role, 'agent');
    return ctx.complete('done');
  });
  await runner.run(cmd('hi'), never);
  await runner.run(cmd('hi'), never);
  assert.equal(runs, 1);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_INPUT_REQUIRED']);
  assert.equal(sink.sent[1].body.seq, sink.sent[2].body.seq);
  await runner.run(cmd('INV-1', FIRST_TURN + 1), never);
  assert.equal(runs, 2);
  assert.equal(states(sink.sent).at(-1), 'TASK_STATE_COMPLETED');
});

test('a first turn (numbered as the dispatcher does) does not read the history; a later turn does', async () => {
  const { ledger, runner } = setup(async (_t, ctx) => ctx.complete());
  const reads: number[] = [];
  const history = ledger.history.bind(ledger);
  ledger.history = async (tenant, taskId, beforeTurn) => {
    reads.push(beforeTurn);
    return history(tenant, taskId, beforeTurn);
  };
  await runner.run(cmd('first', FIRST_TURN, 't-first'), never);
  assert.deepEqual(reads, []);
  await runner.run(cmd('second', FIRST_TURN + 1, 't-first'), never);
  assert.deepEqual(reads, [FIRST_TURN + 1]);
});

test('a handler ignoring its signal cannot hold a canceled turn', async () => {
  const { sink, runner } = setup(() => new Promise(() => undefined));
  const ac = new AbortController();
  const done = runner.run(cmd('x'), ac.signal);
  setTimeout(() => ac.abort(), 20);
  await done;
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED']);
});

test('a cancel recorded before the run (by any worker) ends the turn CANCELED without running the handler', async () => {
  let called = 0;
  const { sink, runner } = setup(async (_t, ctx) => {
    called++;
    return ctx.complete('refunded');
  });
  const c = cmd('x', FIRST_TURN, 't-canceled-first');
  await runner.recordCancel(Envelopes.cancel(c.identity, { reason: 'caller gave up' }));
  await runner.run(c, never);
  assert.equal(called, 0);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_CANCELED']);
  // Another execution of the same task (a later turn) is not affected.
  await runner.run(cmd('y', FIRST_TURN + 1, 't-canceled-first'), never);
  assert.equal(called, 1);
});

test('a cancel recorded while the turn runs elsewhere aborts it at the next lease renewal', async () => {
  const { sink, runner } = setup(
    (task) => new Promise((_, reject) => task.signal.addEventListener('abort', () => reject(task.signal.reason))),
    undefined,
    150, // renewals every 50 ms
  );
  const c = cmd('x', FIRST_TURN, 't-canceled-running');
  const running = runner.run(c, never); // no cancel reaches this signal: only the ledger knows
  await new Promise((r) => setTimeout(r, 20));
  await runner.recordCancel(Envelopes.cancel(c.identity));
  await running;
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_CANCELED']);
});

const metadataOf = (e: TaskEvent) => (e.body as { message?: { metadata?: Record<string, unknown> } }).message?.metadata;
const textOf = (e: TaskEvent) =>
  ((e.body as { message?: { parts?: Array<{ text?: string }> } }).message?.parts ?? []).map((p) => p.text ?? '').join(' ');

test('a canceled turn says which side effects it made anyway: applied ones, and an unknown one once reconciled', async () => {
  const waited: string[] = [];
  const { sink, runner } = setup(
    (task) => new Promise((_, reject) => task.signal.addEventListener('abort', () => reject(task.signal.reason))),
    undefined,
    5000,
    {
      waitFor: async (key) => {
        waited.push(key);
        return { status: 'ok', tool: 'mcp__billing__send_receipt', idempotencyKey: key, text: 'sent', replayed: true };
      },
    },
    {
      sideEffectsOf: async () => [
        { key: 'k-refund', tool: 'mcp__billing__issue_refund', state: 'ok' },
        { key: 'k-receipt', tool: 'mcp__billing__send_receipt', state: 'unknown' },
        { key: 'k-absent', tool: 'mcp__billing__note', state: 'absent' },
        { key: 'k-error', tool: 'mcp__billing__other', state: 'error' },
      ],
    },
  );
  const ac = new AbortController();
  const done = runner.run(cmd('x', FIRST_TURN, 't-effects'), ac.signal);
  setTimeout(() => ac.abort(), 20);
  await done;
  const final = sink.sent.at(-1)!;
  assert.equal(final.kind === 'task.status' && final.body.state, 'TASK_STATE_CANCELED');
  assert.deepEqual(waited, ['k-receipt'], 'only the unknown outcome is waited for');
  assert.deepEqual(metadataOf(final)?.['mesh/side_effects'], [
    { tool: 'mcp__billing__issue_refund', idempotency_key: 'k-refund', outcome: 'applied' },
    { tool: 'mcp__billing__send_receipt', idempotency_key: 'k-receipt', outcome: 'applied' },
  ]);
  assert.match(textOf(final), /mcp__billing__issue_refund \(applied\)/);
});

test('an outcome still unknown when the wait ends is reported unknown; a completed turn is not annotated', async () => {
  let reads = 0;
  const effects: SideEffectReader = {
    sideEffectsOf: async () => {
      reads++;
      return [{ key: 'k-refund', tool: 'mcp__billing__issue_refund', state: 'unknown' }];
    },
  };
  const never: { waitFor: ToolCaller['awaitOutcome'] } = {
    waitFor: (_key, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
  };
  // The wait lasts the unknown-wait budget (1 s here), past a lease of 400 ms: renewed meanwhile, so
  // another worker trying the execution at 500 ms finds it busy, and this one still records the
  // outcome (a lease long enough that a loaded machine's stalls do not let it lapse between renewals).
  const failing = setup(async (_t, ctx) => ctx.fail('the invoice was closed meanwhile'), undefined, 400, never, effects);
  const running = failing.runner.run(cmd('x', FIRST_TURN, 't-unknown-effect'), new AbortController().signal);
  await new Promise((r) => setTimeout(r, 500));
  const other = await failing.ledger.claim(
    {
      executionId: executionId('acme', 't-unknown-effect', FIRST_TURN),
      tenant: 'acme',
      agentId: 'unit-agent',
      taskId: 't-unknown-effect',
      contextId: 'c1',
      turn: FIRST_TURN,
      input: { role: 'user', parts: [] },
    },
    'w2/other',
    100,
  );
  assert.equal(other.kind, 'busy', 'the lease was renewed during the wait');
  await running;
  const final = failing.sink.sent.at(-1)!;
  assert.equal(final.kind === 'task.status' && final.body.state, 'TASK_STATE_FAILED');
  assert.deepEqual(metadataOf(final)?.['mesh/side_effects'], [
    { tool: 'mcp__billing__issue_refund', idempotency_key: 'k-refund', outcome: 'unknown' },
  ]);
  const completing = setup(async (_t, ctx) => ctx.complete('refunded'), undefined, 100, never, effects);
  reads = 0;
  await completing.runner.run(cmd('y', FIRST_TURN, 't-completed'), new AbortController().signal);
  assert.equal(reads, 0, 'a completed turn does not read its effects');
  assert.equal(metadataOf(completing.sink.sent.at(-1)!)?.['mesh/side_effects'], undefined);
});

test("a turn canceled before it starts keeps its lease while it waits for an earlier attempt's unknown effect", async () => {
  const { ledger, sink, runner } = setup(
    async () => assert.fail('a canceled turn is not run'),
    undefined,
    100,
    { waitFor: (_key, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))) },
    { sideEffectsOf: async () => [{ key: 'k-refund', tool: 'mcp__billing__issue_refund', state: 'unknown' }] },
  );
  const c = cmd('x', FIRST_TURN, 't-canceled-unknown');
  await runner.recordCancel(Envelopes.cancel(c.identity));
  const running = runner.run(c, never);
  await new Promise((r) => setTimeout(r, 500));
  const other = await ledger.claim(
    {
      executionId: c.identity.executionId,
      tenant: 'acme',
      agentId: 'unit-agent',
      taskId: 't-canceled-unknown',
      contextId: 'c1',
      turn: FIRST_TURN,
      input: { role: 'user', parts: [] },
    },
    'w2/other',
    100,
  );
  assert.equal(other.kind, 'busy', 'renewed during the wait');
  await running;
  assert.deepEqual(states(sink.sent), ['TASK_STATE_CANCELED']);
  assert.deepEqual(metadataOf(sink.sent[0])?.['mesh/side_effects'], [
    { tool: 'mcp__billing__issue_refund', idempotency_key: 'k-refund', outcome: 'unknown' },
  ]);
});

test('a turn revoked while its history is read never starts the handler, reports nothing and ends no process', async () => {
  // Found by the 5,000-task chaos run: the command was revoked (rebalance) during the history read,
  // the handler started anyway with an aborted signal, and its tool call's CANCELLED rejection went
  // unobserved, which ended the worker process.
  let started = 0;
  const { ledger, sink, runner } = setup(async () => {
    started++;
    await new Promise((r) => setTimeout(r, 5));
    throw new Error('CANCELLED by the aborted signal');
  });
  const revoke = new AbortController();
  const history = ledger.history.bind(ledger);
  ledger.history = async (...args) => {
    revoke.abort(new Error('revoked'));
    return history(...args);
  };
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    // A later turn: only those read the history.
    await runner.run(cmd('x', FIRST_TURN + 1), never, revoke.signal);
    await new Promise((r) => setTimeout(r, 30));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.equal(started, 0, 'the handler did not start');
  assert.deepEqual(unhandled, []);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING'], 'nothing but the WORKING sent before the revocation');
});

test('a command revoked before its turn started runs nothing, sends nothing and releases its lease', async () => {
  let started = 0;
  const { ledger, sink, runner } = setup(async (_task, ctx) => {
    started++;
    return ctx.complete('ran anyway');
  });
  const revoke = new AbortController();
  revoke.abort(new Error('revoked'));
  await runner.run(cmd('x', 1), never, revoke.signal);
  assert.equal(started, 0);
  assert.deepEqual(sink.sent, []);
  // Released: the next owner claims it at once instead of waiting for the lease to expire.
  const next = await ledger.claim(
    {
      executionId: executionId('acme', 't1', 1),
      tenant: 'acme',
      agentId: 'unit-agent',
      taskId: 't1',
      contextId: 'c1',
      turn: 1,
      input: { role: 'user', parts: [] },
    },
    'w2/next',
    5000,
  );
  assert.equal(next.kind, 'claimed');
});

test('the deadline aborts a running turn and fails it', async () => {
  const { sink, runner } = setup(
    (task) => new Promise((_, reject) => task.signal.addEventListener('abort', () => reject(task.signal.reason))),
  );
  await runner.run(cmd('x', FIRST_TURN, 't-deadline', Date.now() + 50), never);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_FAILED']);
  assert.match(JSON.stringify(sink.sent[1].body), /deadline/);
});

test('a run command read after its start-by time is not started: FAILED, the handler never called', async () => {
  let called = 0;
  const { sink, runner } = setup(async (_t, ctx) => {
    called++;
    return ctx.complete();
  });
  const late = cmd('x', FIRST_TURN, 't-late');
  await runner.run({ ...late, identity: { ...late.identity, startByUnixMs: Date.now() - 1 } }, never);
  assert.equal(called, 0);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_FAILED']);
  assert.match(JSON.stringify(sink.sent[0].body), /start-by/);
  // Before its start-by time it runs as usual.
  const timely = cmd('y', FIRST_TURN, 't-timely');
  await runner.run({ ...timely, identity: { ...timely.identity, startByUnixMs: Date.now() + 60_000 } }, never);
  assert.equal(called, 1);
});

test('an owner that lost its lease reports nothing; a busy execution is waited for and taken over', async () => {
  let release!: () => void;
  const { ledger, sink, runner } = setup(
    (_t, ctx) =>
      new Promise((resolve) => {
        release = () => resolve(ctx.complete());
      }),
    undefined,
    200,
  );
  const first = runner.run(cmd('x'), never);
  await new Promise((r) => setTimeout(r, 20));
  ledger.expire(executionId('acme', 't1', FIRST_TURN));
  // A second delivery takes the expired execution over and runs it to the end.
  const second = runner.run(cmd('x'), never);
  await new Promise((r) => setTimeout(r, 100));
  release();
  await Promise.all([first, second]);
  const finals = sink.sent.filter((e) => e.kind === 'task.status' && e.body.final);
  assert.equal(finals.length, 1, 'only the new owner reports the outcome');
  assert.ok(finals[0].body.seq >= 1_000_000);
});

test('an unknown tool outcome is announced while WORKING and handed to the handler when it stays unknown', async () => {
  const unknown: ToolObservation = { status: 'unknown', tool: 'mcp__s__t', idempotencyKey: 'k', reason: 'timeout' };
  const { sink, runner } = setup(
    async (_t, ctx) => {
      const obs = await ctx.callTool({ tool: 'mcp__s__t' });
      return obs.status === 'unknown' ? ctx.fail('still unknown') : ctx.complete();
    },
    { call: async () => unknown },
    5000,
    // The reconciler never settles it: the wait ends with the turn's unknown-wait budget (1 s here).
    { waitFor: (_key, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))) },
  );
  await runner.run(cmd('x'), never);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_FAILED']);
  assert.equal(
    (sink.sent[1].body as { message?: { metadata?: Record<string, unknown> } }).message?.metadata?.['mesh/tool_outcome'],
    'unknown',
  );
});

test('a call reconciled as never applied is made again, and an unknown outcome of that call is waited for too', async () => {
  // The chaos run's one FAILED task: the first issue_refund timed out and was reconciled `absent`;
  // the second timed out as well, and its unknown went straight to the handler, which failed the
  // task although the reconciler then found that no refund had happened either.
  const unknown: ToolObservation = { status: 'unknown', tool: 'mcp__s__t', idempotencyKey: 'k', reason: 'timeout' };
  const ok: ToolObservation = { status: 'ok', tool: 'mcp__s__t', idempotencyKey: 'k', text: 'refunded', replayed: true };
  let calls = 0;
  const settles: Array<ToolObservation | undefined> = [undefined, ok]; // absent, then applied by the second call
  const { sink, runner } = setup(
    async (_t, ctx) => {
      const obs = await ctx.callTool({ tool: 'mcp__s__t' });
      return obs.status === 'ok' ? ctx.complete(obs.text) : ctx.fail(`got ${obs.status}`);
    },
    {
      call: async () => {
        calls++;
        return unknown;
      },
    },
    5000,
    { waitFor: async () => settles.shift() },
  );
  await runner.run(cmd('x'), never);
  assert.equal(calls, 2, 'made again once after `absent`, not again after the second unknown');
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
});

test('a revoked command stops the turn without reporting and releases its lease for the next owner', async () => {
  const { ledger, sink, runner } = setup(
    (task) => new Promise((_, reject) => task.signal.addEventListener('abort', () => reject(task.signal.reason))),
  );
  const revoked = new AbortController();
  const first = runner.run(cmd('x', FIRST_TURN, 't-revoked'), never, revoked.signal);
  await new Promise((r) => setTimeout(r, 20));
  revoked.abort();
  await first;
  assert.equal(sink.sent.filter((e) => e.kind === 'task.status' && e.body.final).length, 0);
  const again = await ledger.claim(
    {
      executionId: 'acme:t-revoked:1',
      tenant: 'acme',
      agentId: 'unit-agent',
      taskId: 't-revoked',
      contextId: 'c1',
      turn: FIRST_TURN,
      input: { role: 'user', parts: [] },
    },
    'other',
    1000,
  );
  assert.deepEqual(again, { kind: 'claimed', attempt: 2, canceled: false });
});

test('a dependency lost mid-turn (a Postgres restart) fails nothing: the turn is given up and runs again', async () => {
  let runs = 0;
  const { sink, runner } = setup(async (_t, ctx) => {
    runs++;
    if (runs === 1) throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    return ctx.complete('done');
  });
  await assert.rejects(runner.run(cmd('x', FIRST_TURN, 't-db'), never), /administrator command/);
  assert.deepEqual(states(sink.sent), ['TASK_STATE_WORKING'], 'no outcome reported');
  // Given up, not held: the redelivery (the bus retries it) takes it over at once.
  await runner.run(cmd('x', FIRST_TURN, 't-db'), never);
  assert.equal(runs, 2);
  assert.equal(states(sink.sent).at(-1), 'TASK_STATE_COMPLETED');
  assert.equal(sink.sent.filter((e) => e.kind === 'task.status' && e.body.final).length, 1);
});
