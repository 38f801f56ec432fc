// `npm start`, Ctrl-C, `npm start` again: the second start serves the README demo like the first,
// also when the broker came back empty (a lost cluster, or a data dir formatted afresh) while
// Postgres kept the directory — the directory's database is the source of truth for agents. Between
// the two, what a newcomer does next: the CLI and a second worker from the local env file, a push to
// a receiver on this machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after } from 'node:test';
import { parseEnv } from 'node:util';
import { freshDatabase, sql } from '../support/infra.js';
import { npmStart } from '../support/npm-start.js';
import { freePort, repoRoot, spawnNode } from '../support/processes.js';

async function rpc(port: number, agent: string, key: string, method: string, params: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}/a2a/${agent}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'a2a-version': '1.0', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  assert.equal(res.status, 200, `${method} on ${agent}: HTTP ${res.status}`);
  return (await res.json()) as { result?: { task?: Record<string, unknown> }; error?: { code: number; message: string } };
}

/** The README's "Try it" path: cards served, echo answers, a refund of a duplicate charge is made. */
async function readmeDemo(
  ports: { dispatcher: number; directory: number },
  key: string,
  invoice: string,
  expect: { state: 'refunded' | 'already_refunded'; refundId?: string } = { state: 'refunded' },
): Promise<string> {
  const search = await fetch(`http://127.0.0.1:${ports.directory}/v1/agents?q=refund`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(search.status, 200);
  assert.match(await search.text(), /refund-agent/);
  for (const agent of ['echo-agent', 'refund-agent']) {
    const card = await fetch(`http://127.0.0.1:${ports.dispatcher}/a2a/${agent}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(card.status, 200, `card of ${agent}: HTTP ${card.status} ${await card.clone().text()}`);
  }
  const message = (text: string) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] } });
  const echo = await rpc(ports.dispatcher, 'echo-agent', key, 'SendMessage', message('hello'));
  assert.equal(echo.error, undefined, JSON.stringify(echo.error));
  assert.equal(echo.result?.task?.status && (echo.result.task.status as { state: string }).state, 'TASK_STATE_COMPLETED');
  const refund = await rpc(
    ports.dispatcher,
    'refund-agent',
    key,
    'SendMessage',
    message(`Please refund the duplicate charge on ${invoice}`),
  );
  assert.equal(refund.error, undefined, JSON.stringify(refund.error));
  const task = refund.result!.task! as { status: { state: string }; artifacts?: { parts: { data?: Record<string, unknown> }[] }[] };
  assert.equal(task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(task));
  const data = task.artifacts?.flatMap((a) => a.parts).find((p) => p.data)?.data;
  assert.equal(data?.state, expect.state, JSON.stringify(task.artifacts));
  assert.equal(typeof data?.refund_id, 'string', 'the refund that settles the invoice is named');
  if (expect.refundId) assert.equal(data?.refund_id, expect.refundId);
  return data!.refund_id as string;
}

/** The README's "Try it" curls and its official-client snippet, run as written against `ports`. */
async function readmeSnippets(ports: { dispatcher: number; directory: number }) {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const tryIt = readme.slice(readme.indexOf('## Try it'));
  const onPorts = (text: string) =>
    text.replaceAll('localhost:8080', `localhost:${ports.dispatcher}`).replaceAll('localhost:8081', `localhost:${ports.directory}`);

  const sh = /```sh\n([\s\S]*?)```/.exec(tryIt)![1]!;
  const commands = sh
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'));
  assert.ok(commands.length >= 5, `README curls: ${commands.length}`);
  let taskId = '';
  const outputs: string[] = [];
  for (const command of commands) {
    const run = spawnSync('bash', ['-c', onPorts(command).replace('<taskId>', taskId)], { encoding: 'utf8' });
    assert.equal(run.status, 0, `${command}: ${run.stderr}`);
    const body = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.equal(body.error, undefined, `${command}: ${run.stdout}`);
    taskId = /"id":"([0-9a-f-]{36})"/.exec(run.stdout)?.[1] ?? taskId;
    outputs.push(run.stdout);
  }
  assert.match(outputs[0]!, /TASK_STATE_COMPLETED/, 'the JSON-RPC refund example completes');
  assert.ok(
    outputs.some((o) => /refund-agent/.test(o)),
    'the directory examples find the refund agent',
  );
  assert.ok(
    outputs.some((o) => /"name":"triage"/.test(o) && /TASK_STATE_COMPLETED/.test(o) && /invoice-agent/.test(o)),
    'the delegation example completes with both agents in its answer',
  );

  // The official-client block, saved where and run how the README says (under a name of its own, so
  // a reader's client.mjs is left alone), only its port changed.
  assert.match(tryIt, /save this as `client\.mjs` at the repository root and run `node client\.mjs`/);
  const snippet = /```js\n([\s\S]*?)```/.exec(tryIt)![1]!;
  const runnable = join(repoRoot, `client-${randomUUID()}.mjs`);
  writeFileSync(runnable, onPorts(snippet));
  after(() => rmSync(runnable, { force: true }));
  const client = spawnSync(process.execPath, [runnable], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
  assert.equal(client.status, 0, client.stderr);
  const result = JSON.parse(client.stdout) as { status?: { state?: number } };
  assert.equal(result.status?.state, 3, `TASK_STATE_COMPLETED in the SDK's proto shape: ${client.stdout}`);
  assert.match(client.stdout, /not_eligible/, 'INV-2292 was charged once');
}

/** A webhook receiver on this machine: the bodies it was sent. */
async function localReceiver(): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => (bodies.push(data), res.writeHead(204).end()));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => (server.closeAllConnections(), server.close()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies };
}

/** Under npm start (and only there: PUSH_EGRESS_ALLOW_CIDRS) a push webhook may be a receiver on this machine. */
async function pushToLocalReceiver(port: number) {
  const receiver = await localReceiver();
  const sent = await rpc(port, 'echo-agent', 'demo-acme', 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello, push' }] },
    configuration: { taskPushNotificationConfig: { url: receiver.url } },
  });
  assert.equal(sent.error, undefined, JSON.stringify(sent.error));
  const taskId = String(sent.result!.task!.id);
  const deadline = Date.now() + 30_000;
  while (!receiver.bodies.some((b) => b.includes(taskId) && b.includes('TASK_STATE_COMPLETED'))) {
    assert.ok(Date.now() < deadline, `no push for ${taskId} reached ${receiver.url}: ${JSON.stringify(receiver.bodies)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The local env file: owner-only, what a second process needs, the same secrets across starts;
 * beside it the dispatcher's signing key (owner-only too), returned as `SIGNING_KEY` to compare.
 */
function localEnvOf(
  path: string,
  expected: { kafka: number; databaseUrl: string; directory: number; dispatcher: number },
): Record<string, string> {
  assert.equal(statSync(path).mode & 0o777, 0o600, 'only its user can read it');
  const vars = parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
  assert.match(vars.AGENTS_OPS_TOKEN ?? '', /^[\w-]{32}$/);
  assert.equal(vars.MESH_OPS_TOKEN, vars.AGENTS_OPS_TOKEN);
  // No tool-token secret for workers: they exchange their grants at the dispatcher.
  assert.equal(vars.AGENTS_TOOL_TOKEN_SECRET, undefined);
  assert.equal(vars.AGENTS_TOKEN_URL, `http://127.0.0.1:${expected.dispatcher}/oauth/token`);
  const keyFile = join(dirname(path), 'dispatcher-signing-key.pem');
  assert.equal(statSync(keyFile).mode & 0o777, 0o600, 'only its user can read the signing key');
  assert.equal(vars.AGENTS_DIRECTORY_TOKEN, 'demo-acme');
  assert.equal(vars.AGENTS_DIRECTORY_URL, `http://127.0.0.1:${expected.directory}`);
  assert.equal(vars.KAFKA_BROKERS, `127.0.0.1:${expected.kafka}`);
  assert.equal(vars.DATABASE_URL, expected.databaseUrl);
  // The broker npm start runs authenticates: the file holds its admin principal (each service has its own).
  if (process.env.KAFKA_AUTH !== 'none') {
    assert.equal(vars.KAFKA_USERNAME, 'mesh-admin');
    assert.match(vars.KAFKA_PASSWORD ?? '', /^[A-Za-z0-9]{20,}$/);
  }
  return { ...vars, SIGNING_KEY: readFileSync(keyFile, 'utf8') };
}

/** With nothing but the file: `mesh` reads the ops token from it, and a second worker starts and is ready. */
async function secondProcesses(localEnv: string, vars: Record<string, string>) {
  const mesh = spawnSync(process.execPath, [join(repoRoot, 'apps/cli/dist/main.js'), '--json', 'unknowns', 'list'], {
    env: { ...process.env, MESH_LOCAL_ENV: localEnv },
    encoding: 'utf8',
  });
  assert.equal(mesh.status, 0, mesh.stderr);
  assert.deepEqual(JSON.parse(mesh.stdout), { unknowns: [] });

  const port = await freePort();
  const { SIGNING_KEY: _key, ...workerEnv } = vars;
  const worker = spawnNode(join(repoRoot, 'apps/agents/dist/main.js'), {
    ...workerEnv,
    AGENTS_PORT: String(port),
    AGENTS_RUN: 'refund-agent',
    AGENTS_WORKER_ID: 'second-worker',
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    assert.equal(worker.child.exitCode, null, `the second worker exited: ${worker.stderr()}`);
    assert.ok(Date.now() < deadline, `the second worker is not ready: ${worker.stderr()}`);
    const ready = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const ops = await fetch(`http://127.0.0.1:${port}/ops/workers`, { headers: { authorization: `Bearer ${vars.AGENTS_OPS_TOKEN}` } });
  assert.equal(ops.status, 200, 'the same ops token');
  worker.child.kill('SIGTERM');
  assert.equal((await worker.exited).code, 0, worker.stderr());
}

test('a second npm start after Ctrl-C serves the demo again, also on an empty broker', { timeout: 420_000 }, async () => {
  const kafkaHome = mkdtempSync(join(tmpdir(), 'mesh-restart-'));
  // The jars are fetched once into the repo's .kafka/libs; the private broker keeps its data here.
  symlinkSync(join(repoRoot, '.kafka', 'libs'), join(kafkaHome, 'libs'));
  after(() => rmSync(kafkaHome, { recursive: true, force: true }));
  const ports = {
    kafka: await freePort(),
    controller: await freePort(),
    dispatcher: await freePort(),
    directory: await freePort(),
    agents: await freePort(),
    billing: await freePort(),
  };
  const env: NodeJS.ProcessEnv = {
    KAFKA_PORT: String(ports.kafka),
    KAFKA_CONTROLLER_PORT: String(ports.controller),
    KAFKA_HOME_DIR: kafkaHome,
    KAFKA_HEAP: '512m',
    KAFKA_BROKERS: `127.0.0.1:${ports.kafka}`,
    DATABASE_URL: await freshDatabase('restart'),
    TOPIC_PREFIX: '',
    DISPATCHER_PORT: String(ports.dispatcher),
    DIRECTORY_PORT: String(ports.directory),
    AGENTS_PORT: String(ports.agents),
    BILLING_TOOLS_PORT: String(ports.billing),
    MESH_LOCAL_ENV: join(kafkaHome, 'mesh', 'local.env'),
    // Generated by npm start, never taken from the environment of the test run.
    AGENTS_OPS_TOKEN: undefined,
    AGENTS_TOOL_TOKEN_SECRET: undefined,
    PUSH_EGRESS_ALLOW_CIDRS: undefined,
  };
  const expected = { kafka: ports.kafka, databaseUrl: env.DATABASE_URL!, directory: ports.directory, dispatcher: ports.dispatcher };

  const first = await npmStart(env);
  const refundId = await readmeDemo(ports, 'demo-acme', 'INV-2291');
  await readmeSnippets(ports);
  const local = localEnvOf(env.MESH_LOCAL_ENV!, expected);
  assert.ok(!first.output().includes(local.AGENTS_OPS_TOKEN!), 'the ops token is not printed');
  await secondProcesses(env.MESH_LOCAL_ENV!, local);
  await pushToLocalReceiver(ports.dispatcher);
  assert.equal(await first.stop(), 0, first.output().slice(-3000));

  // The broker lost everything while Postgres kept the directory, the tasks and the ledgers.
  rmSync(join(kafkaHome, `data-${ports.kafka}`), { recursive: true, force: true });
  const second = await npmStart(env);
  assert.deepEqual(localEnvOf(env.MESH_LOCAL_ENV!, expected), local, 'the secrets and the signing key are kept across restarts');
  await readmeDemo(ports, 'demo-globex', 'INV-3107');
  // The same request as in the first start: answered with the refund that settled it then.
  await readmeDemo(ports, 'demo-acme', 'INV-2291', { state: 'already_refunded', refundId });
  assert.equal(await second.stop(), 0, second.output().slice(-3000));

  // `npm run demo:reset` makes the demo invoices refundable again.
  const reset = spawnSync(process.execPath, [join(repoRoot, 'scripts/demo-reset.mjs')], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  assert.equal(reset.status, 0, reset.stderr);
  assert.match(reset.stdout, /2 demo refund\(s\) removed/);
  assert.deepEqual(await sql(env.DATABASE_URL!, 'SELECT count(*)::int AS n FROM billing.refunds'), [{ n: 0 }]);
});
