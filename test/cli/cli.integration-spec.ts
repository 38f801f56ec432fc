// The `mesh` operator CLI against a real directory, dispatcher, agents runtime and broker.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, ExitCode } from '@mesh/app-cli';
import { echoAgent } from '@mesh/app-agents';
import { BusProducer, createKafka, deadLetterTopic } from '@mesh/bus';
import { eventually, testRun } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { runTask } from '../agents/runtime-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

const env = await startTestDispatcher('cli');
const agents = await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'echo-agent',
  AGENTS_OPS_TOKEN: 'cli-ops-token',
});
await publishAgents(env.kafka, env.topics, [
  agentRecord('echo-agent', { card: { ...agentRecord('echo-agent').card, name: echoAgent.card.name } }),
]);
await eventually('echo-agent card served', async () => (await fetch(`${env.url}/a2a/echo-agent/.well-known/agent-card.json`)).ok);
const { dir } = await startTestDirectory('cli-dir');

const cliEnv = {
  MESH_DIRECTORY_URL: dir.url,
  MESH_DISPATCHER_URL: env.url,
  MESH_AGENTS_URL: agents.url,
  MESH_TOKEN: KEYS.acme,
  MESH_OPS_TOKEN: 'cli-ops-token',
  KAFKA_BROKERS: testRun().brokers.join(','),
  TOPIC_PREFIX: env.prefix,
};

/** Runs `mesh args…` in-process; returns exit code, stdout and stderr. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function mesh(...args: string[]): Promise<{ code: number; out: string; err: string; json: () => any }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: cliEnv });
  return { code, out: out.join('\n'), err: err.join('\n'), json: () => JSON.parse(out.join('\n')) };
}
// commander reads env defaults from process.env.
Object.assign(process.env, cliEnv);

test('usage errors exit 2; an unreachable service exits 3 with its URL', async () => {
  assert.equal((await mesh('tasks', 'frob')).code, ExitCode.usage);
  assert.equal((await mesh('tasks', 'get', 'echo-agent')).code, ExitCode.usage, 'missing argument');
  assert.equal((await mesh('unknowns', 'resolve', 'k', '--state', 'maybe')).code, ExitCode.usage);
  const down = await mesh('--directory-url', 'http://127.0.0.1:9', 'agents', 'list');
  assert.equal(down.code, ExitCode.unreachable);
  assert.match(down.err, /cannot reach the directory at http:\/\/127\.0\.0\.1:9/);
});

test('agents register, list, search and retire through the directory', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mesh-cli-'));
  const file = join(folder, 'agent.json');
  await writeFile(file, JSON.stringify({ id: 'cli-refunds', card: card('CLI Refunds') }));
  const reg = await mesh('--json', 'agents', 'register', file);
  assert.equal(reg.code, 0, reg.err);
  assert.equal(reg.json().id, 'cli-refunds');
  const list = await mesh('agents', 'list');
  assert.match(list.out, /cli-refunds\s+no heartbeat/);
  const found = await mesh('--json', 'agents', 'search', 'refund', 'order');
  assert.ok(found.json().items.some((a: { id: string }) => a.id === 'cli-refunds'));
  assert.equal((await mesh('agents', 'retire', 'cli-refunds')).out, 'retired cli-refunds');
  const again = await mesh('agents', 'retire', 'nobody-here');
  assert.equal(again.code, ExitCode.failed);
  assert.match(again.err, /directory answered 404/);
  assert.equal((await mesh('agents', 'register', join(folder, 'missing.json'))).code, ExitCode.usage);
});

test('tasks send, get, list, watch and cancel with the official A2A client', async () => {
  const sent = await mesh('--json', 'tasks', 'send', 'echo-agent', 'hello', 'mesh');
  assert.equal(sent.code, 0, sent.err);
  const task = sent.json();
  assert.equal(task.state, 'completed');
  assert.deepEqual(task.artifacts, [{ name: 'echo', text: 'hello mesh' }]);
  const got = await mesh('tasks', 'get', 'echo-agent', task.id);
  assert.match(got.out, new RegExp(`^${task.id}  completed`));
  assert.match(got.out, /artifact echo: hello mesh/);
  const listed = await mesh('--json', 'tasks', 'list', 'echo-agent', '--state', 'completed');
  assert.ok(listed.json().tasks.some((t: { id: string }) => t.id === task.id));
  const watched = await mesh('tasks', 'watch', 'echo-agent', task.id);
  assert.equal(watched.code, 0);
  assert.match(watched.err, /completed/, 'progress goes to stderr');
  const cancel = await mesh('tasks', 'cancel', 'echo-agent', task.id);
  assert.equal(cancel.code, ExitCode.failed, 'a completed task cannot be canceled');
  const missing = await mesh('tasks', 'get', 'echo-agent', 'no-such-task');
  assert.equal(missing.code, ExitCode.failed);
  assert.match(missing.err, /^mesh: /);
  assert.equal((await mesh('tasks', 'list', 'echo-agent', '--state', 'sleepy')).code, ExitCode.usage);
});

test('lag from the broker; unknown outcomes from the agents runtime', async () => {
  const lag = await mesh('--json', 'lag', 'echo-agent', '--by-tenant');
  assert.equal(lag.code, 0, lag.err);
  const row = lag.json().agents[0];
  assert.equal(row.agentId, 'echo-agent');
  assert.equal(typeof row.lag, 'number');
  assert.ok(Array.isArray(lag.json().inFlightByTenant));
  const unknowns = await mesh('unknowns', 'list');
  assert.equal(unknowns.out, '(no unknown outcomes)');
  const nope = await mesh('unknowns', 'resolve', 'no-such-key', '--state', 'absent');
  assert.equal(nope.code, ExitCode.failed);
  assert.match(nope.err, /404/);
  const denied = await mesh('--ops-token', 'wrong-token', 'unknowns', 'list');
  assert.equal(denied.code, ExitCode.failed);
  assert.match(denied.err, /401/);
});

test('dead letters: list shows the failure, replay sends it back to its source topic', async () => {
  const source = `${env.prefix}cli.source`;
  const dlq = deadLetterTopic(source);
  const kafka = createKafka({ brokers: testRun().brokers, clientId: 'cli-test' });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: source }, { topic: dlq }], waitForLeaders: true });
  await admin.disconnect();
  const producer = new BusProducer(kafka);
  await producer.connect();
  after(() => producer.disconnect());
  const cmd = runTask('echo-agent', 'acme', 'dead');
  await producer.sendRecord(dlq, 'acme:echo-agent', JSON.stringify({}), {
    dlq_error: 'handler exploded',
    dlq_error_code: 'BOOM',
    dlq_attempts: '3',
    dlq_source_topic: source,
    dlq_source_partition: '0',
    dlq_source_offset: '7',
    mesh_task: cmd.identity.taskId,
  });
  const listed = await mesh('--json', 'dead-letters', 'list', dlq);
  assert.equal(listed.code, 0, listed.err);
  assert.deepEqual(
    listed
      .json()
      .deadLetters.map((d: { error: string; errorCode: string; attempts: number; source: string }) => [
        d.error,
        d.errorCode,
        d.attempts,
        d.source,
      ]),
    [['handler exploded', 'BOOM', 3, `${source}/0@7`]],
  );
  const replayed = await mesh('dead-letters', 'replay', dlq);
  assert.equal(replayed.code, 0, replayed.err);
  assert.equal(replayed.out, `replayed 1 record(s) from ${dlq}`);
  assert.match(replayed.err, /replaying/);
  assert.equal((await mesh('dead-letters', 'list', `${env.prefix}nothing.dlq`)).code, ExitCode.failed);
});

test('the bin runs as a process: --json output and exit codes', async () => {
  const bin = fileURLToPath(new URL('../../../apps/cli/dist/main.js', import.meta.url));
  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [bin, ...args], { env: { ...process.env, ...cliEnv } }, (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
      );
    });
  const ok = await run(['--json', 'unknowns', 'list']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { unknowns: [] });
  assert.equal((await run(['--agents-url', 'http://127.0.0.1:9', 'unknowns', 'list'])).code, ExitCode.unreachable);
  assert.equal((await run(['no-such-command'])).code, ExitCode.usage);
});
