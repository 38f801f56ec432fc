// A team runs its own worker from its own repository: the @mesh packages are packed into
// tarballs, examples/team-agent is copied outside the repository and installed from them (npm, no
// workspace), built with its own tsconfig and started as its own process with its own database,
// under the team's token. Through the platform's dispatcher the team's agent answers, its card is
// in the directory, and the worker consumes its agent's channel and nothing else.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AssignerProtocol } from 'kafkajs';
import { TaskState, type Task } from '@a2a-js/sdk';
import { textMessage } from '@mesh/app-cli';
import { ConsumerGroups } from '@mesh/contract';
import { a2aClient, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, client, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { eventually, freshDatabase } from '../support/infra.js';
import { kafkaClientEnv } from '../support/kafka-principals.js';
import { freePort, repoRoot, spawnNode } from '../support/processes.js';

const AGENT = 'word-count-agent';

// The platform: a dispatcher and a directory on the spec's topic prefix (the directory owns the
// cards topic the dispatcher reads).
const disp = await startTestDispatcher('byo');
const { dir } = await startTestDirectory('byo-dir', { TOPIC_PREFIX: disp.prefix, DISPATCHER_PUBLIC_URL: disp.url });
const directory = client(dir.url);

// Another team's agent in the same mesh: the team's worker must leave its channel alone.
const other = await directory(KEYS.globex, 'POST', '/v1/agents', {
  id: 'globex-ledger-agent',
  card: card('Globex Ledger'),
  visibility: 'public',
});
assert.equal(other.status, 201, JSON.stringify(other.body));

/** Runs a command in `cwd`; its output is kept for the failure message. npm's own settings of a parent `npm test` are not passed on. */
function run(cwd: string, command: string, args: string[]): string {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
  const r = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${command} ${args.join(' ')} in ${cwd}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

// The team's repository: the example, copied outside this one, its dependencies the packed tarballs.
const project = mkdtempSync(join(tmpdir(), 'mesh-team-agent-'));
after(() => rmSync(project, { recursive: true, force: true }));
cpSync(join(repoRoot, 'examples/team-agent'), project, {
  recursive: true,
  filter: (src) => !/[/\\](node_modules|dist|vendor)$/.test(src),
});
const packed = run(repoRoot, process.execPath, ['scripts/pack-team-packages.mjs', join(project, 'vendor')])
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { name: string; file: string });

test('the packed libraries hold the built code only, and the team project installs and builds from them alone', () => {
  for (const { name, file } of packed) {
    const entries = run(project, 'tar', ['-tzf', file]).split('\n').filter(Boolean);
    assert.ok(entries.includes('package/dist/index.js') && entries.includes('package/dist/index.d.ts'), `${name}: ${entries.join()}`);
    assert.deepEqual(
      entries.filter((e) => /\.spec\.|tsbuildinfo|\/src\//.test(e)),
      [],
      `${name} ships no specs, sources or build info`,
    );
  }
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  assert.deepEqual(
    Object.keys(manifest.dependencies).sort(),
    packed.map((p) => p.name).sort(),
    'the example lists every packed @mesh package (so npm never asks a registry for one)',
  );
  run(project, 'npm', ['install', '--prefer-offline', '--no-audit', '--no-fund']);
  const lock = readFileSync(join(project, 'package-lock.json'), 'utf8');
  assert.doesNotMatch(lock, /"resolved": "https?:[^"]*@mesh/, 'no @mesh package came from a registry');
  run(project, 'npm', ['run', 'build']);
});

test("the team's worker registers its agent, answers through the dispatcher and consumes only its channel", async () => {
  const port = await freePort();
  // Its own environment: the broker, its own database, the directory and the team's token.
  const worker = spawnNode(
    'dist/main.js',
    {
      PATH: process.env.PATH,
      KAFKA_BROKERS: disp.env.KAFKA_BROKERS,
      ...kafkaClientEnv(),
      TOPIC_PREFIX: disp.prefix,
      DATABASE_URL: await freshDatabase('byo-worker'),
      AGENTS_DIRECTORY_URL: dir.url,
      AGENTS_DIRECTORY_TOKEN: KEYS.acme,
      AGENTS_PORT: String(port),
      AGENTS_OPS_TOKEN: 'byo-ops-token',
    },
    [],
    { cwd: project, ownEnv: true },
  );
  const output = () => worker.stdout() + worker.stderr();
  await eventually(
    'the worker is ready',
    async () => {
      if (worker.child.exitCode !== null) throw new Error(`the worker exited ${worker.child.exitCode}:\n${output()}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok;
    },
    90_000,
    250,
  );

  // The card is in the directory, the team's (acme) and private to it.
  const own = await directory(KEYS.acme, 'GET', `/v1/agents/${AGENT}`);
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal(own.body.tenant, 'acme');
  assert.equal(own.body.visibility, 'private');
  assert.equal(own.body.card.name, 'Word Count Agent');
  assert.equal((await directory(KEYS.globex, 'GET', `/v1/agents/${AGENT}`)).status, 404, 'another team does not see it');

  // A task through the dispatcher with the official A2A client, under the team's key.
  const a2a = await eventually('the dispatcher serves the card', async () =>
    a2aClient(disp.url, AGENT, 'JSONRPC', KEYS.acme).catch(() => undefined),
  );
  const task = (await a2a.sendMessage(textMessage('three little words', {}, true))) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status));
  const part = task.artifacts.flatMap((a) => a.parts).find((p) => p.content?.$case === 'data');
  assert.deepEqual(part?.content?.$case === 'data' ? part.content.value : undefined, { words: 3, characters: 18 });

  // Its consumer group reads its agent's command topic and nothing else; no group reads the other team's.
  const groups = new ConsumerGroups(disp.prefix);
  const admin = disp.kafka.admin();
  await admin.connect();
  try {
    const workerGroups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(groups.agentWorkersPrefix()));
    assert.deepEqual(workerGroups, [groups.agentWorkers(AGENT)]);
    const [described] = (await admin.describeGroups(workerGroups)).groups;
    assert.equal(described!.state, 'Stable');
    const topics = described!.members.flatMap((m) =>
      Object.keys(AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment ?? {}),
    );
    assert.deepEqual([...new Set(topics)], [disp.topics.commands(AGENT)]);
  } finally {
    await admin.disconnect();
  }

  // The worker's own view agrees: one consumer, its agent's topic, the turn it ran.
  const ops = await fetch(`http://127.0.0.1:${port}/ops/workers`, { headers: { authorization: 'Bearer byo-ops-token' } });
  assert.equal(ops.status, 200);
  const { agents } = (await ops.json()) as { agents: { agentId: string; groupId: string; topic: string; processed: number }[] };
  assert.deepEqual(
    agents.map((a) => [a.agentId, a.groupId, a.topic]),
    [[AGENT, groups.agentWorkers(AGENT), disp.topics.commands(AGENT)]],
  );
  assert.equal(agents[0]!.processed, 1);

  // SIGTERM drains and exits cleanly, as a team's deployment stops it.
  worker.child.kill('SIGTERM');
  assert.equal((await worker.exited).code, 0, output());
});
