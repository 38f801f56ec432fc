import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { freePort, spawnNode } from '../support/processes.js';
import { TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { platformPrincipal } from '../support/kafka-principals.js';

const apps = [
  { name: 'directory', script: 'apps/directory/dist/main.js', portVar: 'DIRECTORY_PORT' },
  { name: 'dispatcher', script: 'apps/dispatcher/dist/main.js', portVar: 'DISPATCHER_PORT' },
  { name: 'agents', script: 'apps/agents/dist/main.js', portVar: 'AGENTS_PORT' },
] as const;

// Each app as its own Kafka principal (mesh-directory, mesh-dispatcher, mesh-agents) when the broker authenticates.
test('each app starts, answers /healthz 200 with Kafka and Postgres ok, and exits 0 on SIGTERM', { timeout: 600000 }, async () => {
  const DATABASE_URL = await freshDatabase('apps-start');
  const TOPIC_PREFIX = uniquePrefix('apps-start');
  const ports = await Promise.all(apps.map(() => freePort()));
  const procs = apps.map((app, i) =>
    // info: when an app does not come up, its stderr says what it was waiting for.
    spawnNode(app.script, {
      DATABASE_URL,
      TOPIC_PREFIX,
      KAFKA_BROKERS: testRun().brokers.join(','),
      LOG_LEVEL: 'info',
      // refund-agent's billing-tools take only tokens minted with it: the agents app refuses to start without it.
      AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET,
      [app.portVar]: String(ports[i]),
      ...platformPrincipal(app.name),
    }),
  );
  for (const [i, app] of apps.entries()) {
    const body = await eventually(
      `${app.name} /healthz`,
      async () => {
        const res = await fetch(`http://127.0.0.1:${ports[i]}/healthz`);
        return res.status === 200 ? ((await res.json()) as { status: string; checks: Record<string, string> }) : undefined;
      },
      // The directory alone may wait up to 60 s per topic for partition leaders on a busy broker.
      180000,
      200,
    ).catch((err: Error) => assert.fail(`${err.message}\nstderr of ${app.name}:\n${procs[i].stderr()}`));
    assert.equal(body.status, 'ok');
    assert.equal(body.checks.kafka, 'ok');
    assert.equal(body.checks.postgres, 'ok');
  }
  for (const p of procs) p.child.kill('SIGTERM');
  for (const [i, p] of procs.entries()) assert.deepEqual(await p.exited, { code: 0, signal: null }, `${apps[i].name} exits cleanly`);
});

test('bad configuration stops the process with one line naming the problem and a non-zero exit', async () => {
  const cases: Array<{ env: NodeJS.ProcessEnv; expect: RegExp }> = [
    { env: { KAFKA_BROKERS: 'nonsense' }, expect: /^dispatcher: failed to start: invalid configuration: KAFKA_BROKERS="nonsense"/ },
    {
      env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' },
      expect: /^dispatcher: failed to start: cannot use Postgres at 127\.0\.0\.1:1\/nowhere/,
    },
    { env: { KAFKA_BROKERS: '127.0.0.1:1' }, expect: /^dispatcher: failed to start: cannot reach Kafka at 127\.0\.0\.1:1/ },
    { env: { DISPATCHER_PORT: 'eighty' }, expect: /^dispatcher: failed to start: invalid configuration: DISPATCHER_PORT="eighty"/ },
    {
      env: { KAFKA_USERNAME: 'mesh-dispatcher', KAFKA_PASSWORD: '' },
      expect: /^dispatcher: failed to start: KAFKA_USERNAME and KAFKA_PASSWORD go together: set both or neither$/,
    },
  ];
  // A broker that authenticates refuses a wrong password: the line names the broker and the principal.
  if (process.env.KAFKA_USERNAME) {
    const at = testRun().brokers.join(',').replaceAll('.', '\\.');
    cases.push({
      env: { KAFKA_USERNAME: 'mesh-dispatcher', KAFKA_PASSWORD: 'not-its-password' },
      expect: new RegExp(
        `^dispatcher: failed to start: Kafka at ${at} refused principal mesh-dispatcher: authentication failed \\(check KAFKA_USERNAME/KAFKA_PASSWORD\\)$`,
      ),
    });
    // No principal at all: the broker closes the connection, and the line says what it may want.
    cases.push({
      env: { KAFKA_USERNAME: '', KAFKA_PASSWORD: '' },
      expect: new RegExp(
        `^dispatcher: failed to start: cannot reach Kafka at ${at}: .*\\(the broker may require authentication: set KAFKA_USERNAME/KAFKA_PASSWORD\\)$`,
      ),
    });
  }
  for (const c of cases) {
    const p = spawnNode('apps/dispatcher/dist/main.js', { DATABASE_URL: testRun().databaseUrl, ...c.env });
    const { code } = await p.exited;
    assert.equal(code, 1);
    const lines = p.stderr().trim().split('\n');
    assert.equal(lines.length, 1, `exactly one line, got:\n${p.stderr()}`);
    assert.match(lines[0], c.expect);
  }
});
