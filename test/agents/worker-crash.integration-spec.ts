import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { TopicNames } from '@mesh/contract';
import { eventually, freshDatabase, sql, testRun, uniquePrefix } from '../support/infra.js';
import { refundCount, startTestBillingTools } from './agents-fixtures.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { standInForTopicOwners } from '../support/topic-owners.js';
import { addDuplicateInvoice, commandProducer, EventCollector, runTask, sendCommand } from './runtime-fixtures.js';

const main = fileURLToPath(new URL('../../../apps/agents/dist/main.js', import.meta.url));
const db = await freshDatabase('worker-crash');
const billing = await startTestBillingTools(db);
const prefix = uniquePrefix('worker-crash');
const topics = new TopicNames(prefix);
await standInForTopicOwners(prefix);

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Starts a worker process running refund-agent; resolves once it is ready. */
async function startWorker(name: string): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      KAFKA_BROKERS: testRun().brokers.join(','),
      TOPIC_PREFIX: prefix,
      DATABASE_URL: db,
      AGENTS_PORT: String(port),
      AGENTS_RUN: 'refund-agent',
      AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      AGENTS_WORKER_ID: name,
      AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl, requestTimeoutMs: 30000 } }),
      AGENTS_RECONCILE_INTERVAL_MS: '200',
      AGENTS_EXECUTION_LEASE_MS: '2000',
      AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  await eventually(
    `worker ${name} ready`,
    async () => {
      if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    },
    30000,
    200,
  );
  return child;
}

test('a worker SIGKILLed mid-tool-call: after restart the task completes with exactly one refund and no second call', async () => {
  await addDuplicateInvoice(db, 'acme', 'INV-9201');
  const events = new EventCollector();
  const first = await startWorker('worker-a');
  await events.start(topics);
  const producer = await commandProducer();
  // The refund commits, then the answer hangs: the worker dies waiting for it.
  billing.hooks.delay('issue_refund', { phase: 'after-commit', ms: 120000 });
  const cmd = runTask('refund-agent', 'acme', 'Refund INV-9201');
  await sendCommand(producer, topics, cmd);
  await eventually('the refund was committed while the call hangs', async () => (await refundCount(db, 'acme', 'INV-9201')) === 1);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  assert.equal(events.finals(cmd.identity.taskId).length, 0, 'the killed worker reported nothing final');

  await startWorker('worker-b');
  const done = await events.final(cmd.identity.taskId, 1, 60000);
  assert.equal(done.body.state, 'TASK_STATE_COMPLETED');
  assert.ok(done.body.seq >= 1_000_000, 'the takeover attempt emits seqs above the dead attempt');
  assert.equal(await refundCount(db, 'acme', 'INV-9201'), 1);
  assert.equal(billing.hooks.calls('issue_refund'), 1, 'the restarted worker reconciled instead of calling again');
  const exec = await sql<{ attempt: number; state: string }>(db, `SELECT attempt, state FROM agents.executions WHERE execution_id = $1`, [
    cmd.identity.executionId,
  ]);
  assert.deepEqual(exec[0], { attempt: 2, state: 'finished' });
});
