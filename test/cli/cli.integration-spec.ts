// The `mesh` operator CLI against a real directory, dispatcher, agents runtime and broker.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile, mkdtemp, readFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli, ExitCode } from '@mesh/app-cli';
import { echoAgent } from '@mesh/app-agents';
import { BusAdmin, BusProducer, createKafka, deadLetterTopic } from '@mesh/bus';
import { eventually, testRun } from '../support/infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { runTask } from '../agents/runtime-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';

const env = await startTestDispatcher('cli');
const agents = await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'echo-agent',
  AGENTS_WORKER_ID: 'cli-worker',
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

test('a refusal for want of a token says where mesh takes it from; a refused token says which to check', async () => {
  for (const args of [
    ['agents', 'list'],
    ['tasks', 'list', 'echo-agent'],
  ]) {
    const r = await mesh('--token', '', ...args);
    assert.equal(r.code, ExitCode.failed, args.join(' '));
    assert.match(
      r.err,
      /\(no token given: pass --token or set MESH_TOKEN to an API key or JWT; npm start's development keys are demo-acme and demo-globex\)$/,
    );
    const wrong = await mesh('--token', 'not-a-key', ...args);
    assert.equal(wrong.code, ExitCode.failed);
    assert.match(wrong.err, /\(the token given was refused: check --token or MESH_TOKEN\)$/, args.join(' '));
  }
  const ops = await mesh('--ops-token', '', 'unknowns', 'list');
  assert.equal(ops.code, ExitCode.failed);
  assert.match(
    ops.err,
    /\(no ops token given: pass --ops-token or set MESH_OPS_TOKEN; npm start writes its own to \.mesh\/local\.env, which mesh reads\)$/,
  );
});

test('views that still print list a failing service under problems; what does not exist is not_found; a group needs a subcommand', async () => {
  // workers --in-flight: the agents runtime unreachable, the broker's view is printed all the same.
  const w = await mesh('--json', '--agents-url', 'http://127.0.0.1:9', 'workers', 'echo-agent', '--in-flight');
  assert.equal(w.code, ExitCode.ok, w.out);
  assert.equal(w.json().agents[0].agentId, 'echo-agent');
  assert.match(w.json().problems.join(' '), /cannot reach the agents runtime at http:\/\/127\.0\.0\.1:9/);
  const task = await mesh('--json', 'tasks', 'get', 'echo-agent', '00000000-0000-4000-8000-000000000000');
  assert.equal(task.code, ExitCode.failed);
  assert.equal(task.json().error.code, 'not_found');
  assert.match(task.json().error.message, /^dispatcher: Task not found/);
  const agent = await mesh('--json', 'agents', 'retire', 'nobody-here-at-all');
  assert.equal(agent.json().error.code, 'not_found');
  const group = await mesh('--json', 'agents');
  assert.equal(group.code, ExitCode.usage);
  assert.match(group.json().error.message, /^a subcommand is required/);
});

test('a console whose port is taken fails in one line naming the address, no stack', async () => {
  const busy = Number(new URL(env.url).port);
  const r = await mesh('console', '--port', String(busy));
  assert.equal(r.code, ExitCode.failed);
  assert.equal(r.err.split('\n').length, 1, r.err);
  assert.match(r.err, new RegExp(`^mesh: cannot serve the console on 127\\.0\\.0\\.1:${busy}: the port is in use`));
});

test('an unknown agent or topic and a bad --state are one clear line; under --json errors are JSON', async () => {
  const send = await mesh('tasks', 'send', 'nobody-agent', 'hi');
  assert.equal(send.code, ExitCode.failed);
  assert.match(send.err, /^mesh: unknown agent nobody-agent: the dispatcher has no agent card for it/);
  assert.doesNotMatch(send.err, /Agent Card/);
  const lag = await mesh('lag', 'nobody-agent');
  assert.equal(lag.code, ExitCode.failed);
  assert.match(lag.err, /^mesh: unknown agent nobody-agent: there is no command topic \S+nobody-agent/);
  assert.doesNotMatch(lag.err, /topic-partition/);
  const state = await mesh('tasks', 'list', 'echo-agent', '--state', 'sleepy');
  assert.equal(state.code, ExitCode.usage);
  assert.match(state.err, /unknown state sleepy; valid states: submitted, working, completed, .*input-required/);
  const json = await mesh('--json', 'workers', 'nobody-agent');
  assert.equal(json.code, ExitCode.failed);
  assert.equal(json.json().error.code, 'not_found');
  assert.match(json.json().error.message, /unknown agent nobody-agent/);
  assert.equal(json.err, '');
  const usage = await mesh('--json', 'unknowns', 'resolve', 'k', '--state', 'maybe');
  assert.equal(usage.code, ExitCode.usage);
  assert.deepEqual(Object.keys(usage.json().error), ['code', 'message']);
  assert.equal(usage.json().error.code, 'usage');
  assert.match(usage.json().error.message, /Allowed choices are ok, error, absent/);
});

test('workers: each process by worker id and host with its agents, group members, partition assignment, lag, and lag with no consumer flagged', async () => {
  const live = await mesh('--json', 'workers', 'echo-agent', '--in-flight');
  assert.equal(live.code, 0, live.err);
  const [echo] = live.json().agents;
  assert.equal(echo.agentId, 'echo-agent');
  assert.ok(echo.members.length >= 1, 'the agents runtime is a member');
  const assigned = echo.members.flatMap((m: { partitions: number[] }) => m.partitions).sort((a: number, b: number) => a - b);
  assert.deepEqual(
    assigned,
    echo.partitions.map((p: { partition: number }) => p.partition),
    'every partition is assigned',
  );
  assert.ok(echo.partitions.every((p: { memberId: string | null }) => p.memberId !== null));
  assert.equal(echo.lagWithoutConsumer, false);
  assert.equal(echo.turnsInFlight, 0);
  assert.equal(echo.lastHeartbeatAt, null, 'echo-agent is not in this directory');
  assert.equal(live.json().problems, undefined);
  // The process behind the member, by worker id, host and the Kafka principal it consumes as
  // (run-tests gives every process the admin's credentials), from its heartbeats.
  const principal = process.env.KAFKA_USERNAME ?? null;
  assert.deepEqual(
    live
      .json()
      .workers.map((w: { workerId: string; host: string; principal: string | null; agents: string[] }) => [
        w.workerId,
        w.host,
        w.principal,
        w.agents,
      ]),
    [['cli-worker', hostname(), principal, ['echo-agent']]],
  );
  assert.match(
    (await mesh('workers', 'echo-agent')).out,
    new RegExp(`^worker cli-worker on ${hostname()} {2}principal ${principal ?? '-'} {2}agents echo-agent {2}last heartbeat \\d{4}-`),
  );
  const password = process.env.KAFKA_PASSWORD;
  if (password) assert.ok(!JSON.stringify(live.json()).includes(password), 'a principal, never its password');

  // An agent whose command topic holds a record and which no worker reads.
  const topic = env.topics.commands('idle-agent');
  const kafka = createKafka({ brokers: testRun().brokers, clientId: 'cli-test-workers' });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = new BusProducer(kafka);
  await producer.connect();
  await producer.sendRecord(topic, 'acme:idle-agent', JSON.stringify({}), {});
  await producer.disconnect();
  const idle = await mesh('--json', 'workers', 'idle-agent');
  assert.equal(idle.code, 0, idle.err);
  const [row] = idle.json().agents;
  assert.deepEqual([row.members, row.lag, row.lagWithoutConsumer], [[], 1, true]);
  assert.deepEqual(
    row.partitions.map((p: { memberId: string | null }) => p.memberId),
    [null, null],
  );
  assert.match((await mesh('workers', 'idle-agent')).out, /^idle-agent .*lag 1 {2}last heartbeat - {2}! LAG WITH NO CONSUMER/);
  const noDirectory = await mesh('--json', '--directory-url', 'http://127.0.0.1:9', 'workers', 'idle-agent');
  assert.equal(noDirectory.code, 0, 'the broker view is shown without the directory');
  assert.match(noDirectory.json().problems[0], /cannot reach the directory/);
});

test('mesh --help loads neither Kafka nor the A2A SDK', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'mesh-cli-modules-'));
  const log = join(folder, 'modules.log');
  // A module-resolution hook that writes every module URL resolved to MODULE_LOG.
  await writeFile(
    join(folder, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.MODULE_LOG, r.url + '\\n');
  return r;
}
`,
  );
  await writeFile(join(folder, 'register.mjs'), `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`);
  const bin = fileURLToPath(new URL('../../../apps/cli/dist/main.js', import.meta.url));
  for (const args of [['--help'], ['tasks', '--help'], ['dead-letters', 'replay', '--help']]) {
    await writeFile(log, '');
    const code = await new Promise<number>((resolve) =>
      execFile(
        process.execPath,
        ['--import', join(folder, 'register.mjs'), bin, ...args],
        { env: { ...process.env, MODULE_LOG: log } },
        (err) => resolve(err ? Number((err as { code?: number }).code) : 0),
      ),
    );
    assert.equal(code, 0);
    const loaded = (await readFile(log, 'utf8')).split('\n');
    assert.ok(
      loaded.some((u) => u.includes('/commander/')),
      'the hook saw the modules mesh loads',
    );
    const heavy = loaded.filter((u) => /\/node_modules\/(kafkajs|@a2a-js\/sdk|zod|@nestjs)\/|\/libs\/(bus|contract)\//.test(u));
    assert.deepEqual(heavy, [], `mesh ${args.join(' ')} loaded them`);
  }
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
  assert.match(sent.err, new RegExp(`sent to echo-agent: task ${task.id}`), 'a blocking send shows its progress on stderr');
  assert.match(sent.err, /\d\d:\d\d:\d\d {2}completed/);
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
});

test('tasks get and watch show control characters from an artifact as escapes, never raw; --json keeps them exact', async () => {
  // ESC sequences that would clear the screen, set the title, recolour; a CR that rewrites the line; a bidi override.
  const hostile = 'ok\u001b[2J\u001b]0;pwned\u0007\u001b[31mred\rFAKE\u202eevil';
  const sent = await mesh('--json', 'tasks', 'send', 'echo-agent', hostile);
  assert.equal(sent.code, 0, sent.err);
  const task = sent.json();
  assert.equal(task.artifacts[0].text, hostile, '--json output is exact');
  // eslint-disable-next-line no-control-regex
  const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
  for (const args of [
    ['tasks', 'get', 'echo-agent', task.id],
    ['tasks', 'watch', 'echo-agent', task.id],
  ]) {
    const r = await mesh(...args);
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.out + r.err, raw, `${args[1]}: no raw control characters`);
    assert.ok(r.out.includes('artifact echo: ok\\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mred\\rFAKE\\u202eevil'), `${args[1]}: ${r.out}`);
  }
});

test('tasks list shows when each task changed and pages with --page-size and --page-token', async () => {
  for (const text of ['page one', 'page two']) assert.equal((await mesh('tasks', 'send', 'echo-agent', text)).code, 0);
  const first = await mesh('--json', 'tasks', 'list', 'echo-agent', '--page-size', '1');
  assert.equal(first.code, 0, first.err);
  const page1 = first.json();
  assert.equal(page1.tasks.length, 1);
  assert.match(page1.tasks[0].updated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  assert.ok(page1.nextPageToken, 'a next page is announced');
  const page2 = (await mesh('--json', 'tasks', 'list', 'echo-agent', '--page-size', '1', '--page-token', page1.nextPageToken)).json();
  assert.equal(page2.tasks.length, 1);
  assert.notEqual(page2.tasks[0].id, page1.tasks[0].id);
  const human = await mesh('tasks', 'list', 'echo-agent', '--page-size', '1');
  const [line] = human.out.split('\n');
  assert.deepEqual(line!.split(/\s+/).slice(0, 3), [page1.tasks[0].updated, page1.tasks[0].id, 'completed']);
  assert.match(human.out, /\nnext page: --page-token \S+$/);
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
  assert.equal(listed.json().deadLetters[0].replayed, false);
  const busAdmin = new BusAdmin(kafka);
  after(() => busAdmin.close());
  const dry = await mesh('--json', 'dead-letters', 'replay', dlq, '--dry-run');
  assert.equal(dry.code, 0, dry.err);
  assert.deepEqual(
    dry.json().wouldReplay.map((d: { source: string }) => d.source),
    [`${source}/0@7`],
  );
  assert.equal(await busAdmin.recordCount(source), 0, 'a dry run sends nothing');
  const replayed = await mesh('dead-letters', 'replay', dlq);
  assert.equal(replayed.code, 0, replayed.err);
  assert.equal(replayed.out, `replayed 1 record(s) from ${dlq}`);
  assert.match(replayed.err, /replaying/);
  assert.match(replayed.err, /sent 1\/1/);
  assert.equal(await busAdmin.recordCount(source), 1);
  const after1 = await mesh('dead-letters', 'list', dlq);
  assert.match(after1.out, /BOOM {2}handler exploded .*\[replayed\]$/);
  const dryAgain = await mesh('dead-letters', 'replay', dlq, '--dry-run');
  assert.equal(dryAgain.out, `would replay 0 record(s) from ${dlq} (dry run: nothing sent)`);
  const nothing = `no topic ${env.prefix}nothing and no dead-letter topic ${env.prefix}nothing.dlq (check the agent id or topic and --prefix)`;
  assert.equal((await mesh('dead-letters', 'list', `${env.prefix}nothing.dlq`)).code, ExitCode.failed);
  const missing = await mesh('--json', 'dead-letters', 'replay', `${env.prefix}nothing.dlq`);
  assert.equal(missing.code, ExitCode.failed);
  assert.deepEqual(missing.json(), { error: { code: 'not_found', message: nothing } });
  // An agent that exists but never dead-lettered anything: an empty list, nothing to replay.
  const none = await mesh('dead-letters', 'list', 'echo-agent');
  assert.equal(none.code, ExitCode.ok, none.err);
  assert.equal(none.out, `(no dead letters in ${env.topics.deadLetters(env.topics.commands('echo-agent'))})`);
  const noneReplayed = await mesh('--json', 'dead-letters', 'replay', 'echo-agent');
  assert.equal(noneReplayed.code, ExitCode.ok, noneReplayed.err);
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
  // Kafka failures are the one `mesh:` line: kafkajs itself prints nothing.
  const lag = await run(['lag', 'nobody-agent']);
  assert.equal(lag.code, ExitCode.failed);
  assert.equal(
    lag.stderr,
    `mesh: unknown agent nobody-agent: there is no command topic ${env.topics.commands('nobody-agent')} (check the id and --prefix)\n`,
  );
  const replay = await run(['dead-letters', 'replay', `${env.prefix}nothing.dlq`]);
  assert.equal(
    replay.stderr
      .trim()
      .split('\n')
      .filter((l) => !/^\d\d:\d\d:\d\d {2}/.test(l))
      .join('\n'),
    `mesh: no topic ${env.prefix}nothing and no dead-letter topic ${env.prefix}nothing.dlq (check the agent id or topic and --prefix)`,
  );
  const down = await run(['--json', '--brokers', '127.0.0.1:9', 'lag', 'echo-agent']);
  assert.equal(down.code, ExitCode.unreachable);
  assert.equal(JSON.parse(down.stdout).error.code, 'unreachable');
  assert.equal(down.stderr, '', 'no kafkajs log lines');
});
