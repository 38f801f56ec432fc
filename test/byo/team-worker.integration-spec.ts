// A team runs its own worker from its own repository, with only the credentials `mesh teams create`
// gives it: the @mesh packages are packed into tarballs, examples/team-agent is copied outside the
// repository and installed from them (npm, no workspace), built with its own tsconfig and started as
// its own process with the settings of the team's env file and its directory token, nothing of the
// platform's. Through the platform's dispatcher the team's agent answers; its ledgers are in the
// team's database, its events signed on the team events topic; its grant gets no tool token beyond
// the team's audiences; after `mesh teams revoke` its worker no longer logs in.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AssignerProtocol } from 'kafkajs';
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, type JWK } from 'jose';
import { TaskState, type Task } from '@a2a-js/sdk';
import { textMessage, teamNames } from '@mesh/app-cli';
import { loadBillingToolsConfig, startBillingTools } from '@mesh/app-billing-tools';
import { ConsumerGroups, decodeEnvelope, Headers, ToolGrants } from '@mesh/contract';
import { a2aClient, startTestDispatcher } from '../support/dispatcher-harness.js';
import { card, client, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { eventually, sql, testRun } from '../support/infra.js';
import { freePort, repoRoot, spawnNode, type SpawnedProcess } from '../support/processes.js';
import { cleanUpTeamAtEnd, envFolder, meshProcess, readEnvFile, teamKafka, uniqueTeamName } from '../support/teams.js';
import { exchangeGrant, initializeWith } from '../support/tool-tokens.js';

const AGENT = 'word-count-agent';
const OPS_TOKEN = 'byo-dispatcher-ops-token';
const ISSUER = 'https://dispatcher.byo.test';

// The platform: a dispatcher (with its ops token for the team bindings and its grant issuer) and a
// directory on the spec's topic prefix (the directory owns the cards topic the dispatcher reads).
const disp = await startTestDispatcher('byo', {}, { DISPATCHER_OPS_TOKEN: OPS_TOKEN, DISPATCHER_ISSUER: ISSUER });
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

// The operator gives the team its credentials: `mesh teams create` as a process, with the admin
// Kafka principal of the run, the dispatcher's ops token and the server's Postgres.
const team = uniqueTeamName('words');
const names = teamNames(team);
cleanUpTeamAtEnd(team, disp.prefix);
const envFile = join(await envFolder(), 'team.env');
const platform = ['--dispatcher-url', disp.url, '--ops-token', OPS_TOKEN, '--directory-url', dir.url];
const serverUrl = (() => {
  const u = new URL(testRun().databaseUrl);
  u.pathname = '/postgres';
  return u.toString();
})();
const created = await meshProcess(
  [
    ...platform,
    'teams',
    'create',
    team,
    '--tenant',
    'acme',
    '--agent',
    AGENT,
    '--tool-audience',
    'billing-tools',
    '--out',
    envFile,
    '--database-admin-url',
    serverUrl,
  ],
  { TOPIC_PREFIX: disp.prefix },
);
assert.equal(created.code, 0, created.err);
const teamEnv = readEnvFile(envFile);
const eventKey = JSON.parse(teamEnv.AGENTS_EVENT_KEY!) as JWK;

/** The team's worker with the env file's settings, its directory token and its own port and ops token: nothing else. */
async function startWorker(): Promise<{ worker: SpawnedProcess; port: number; output: () => string }> {
  const port = await freePort();
  const worker = spawnNode(
    'dist/main.js',
    {
      PATH: process.env.PATH,
      ...teamEnv,
      AGENTS_DIRECTORY_TOKEN: KEYS.acme,
      AGENTS_PORT: String(port),
      AGENTS_OPS_TOKEN: 'byo-ops-token',
    },
    [],
    { cwd: project, ownEnv: true },
  );
  return { worker, port, output: () => worker.stdout() + worker.stderr() };
}

/** The records of `topic` from the beginning, as the admin reads them. */
async function recordsOf(topic: string): Promise<Array<{ headers: Record<string, string>; value: Buffer | null }>> {
  const admin = disp.kafka.admin();
  await admin.connect();
  const total = (await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect())).reduce((n, p) => n + Number(p.high), 0);
  if (total === 0) return [];
  const consumer = disp.kafka.consumer({ groupId: `byo-reader-${Date.now()}` });
  const out: Array<{ headers: Record<string, string>; value: Buffer | null }> = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        out.push({
          headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
          value: message.value,
        });
      },
    });
    await eventually(`${total} records of ${topic}`, async () => out.length >= total, 30_000, 100);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

/** The team as `mesh teams list --json` shows it. */
async function listed(): Promise<Record<string, unknown> | undefined> {
  const r = await meshProcess([...platform, '--json', 'teams', 'list'], { TOPIC_PREFIX: disp.prefix });
  assert.equal(r.code, 0, r.err);
  return (JSON.parse(r.out) as { teams: Array<Record<string, unknown>> }).teams.find((t) => t.name === team);
}

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

test("the env file holds the team's own credentials and none of the platform's", () => {
  assert.equal(statSync(envFile).mode & 0o777, 0o600);
  assert.equal(teamEnv.KAFKA_USERNAME, names.username);
  assert.notEqual(teamEnv.KAFKA_USERNAME, process.env.KAFKA_USERNAME);
  assert.equal(new URL(teamEnv.DATABASE_URL!).pathname, `/${names.database}`);
  assert.equal(new URL(teamEnv.DATABASE_URL!).username, names.role);
  assert.equal(teamEnv.TOPIC_PREFIX, disp.prefix);
  assert.equal(teamEnv.AGENTS_RUN, AGENT);
  assert.equal(teamEnv.AGENTS_DIRECTORY_URL, dir.url);
  assert.equal(teamEnv.AGENTS_TOKEN_URL, `${disp.url}${ToolGrants.tokenPath}`);
  assert.deepEqual(
    Object.keys(teamEnv).filter((k) => /SECRET|OPS_TOKEN|SIGNING/.test(k)),
    [],
    'no tool secret, ops token or signing key',
  );
});

test("the team's worker, with only the env file, answers through the dispatcher; ledgers in its database, events signed on the team topic", async () => {
  const { worker, port, output } = await startWorker();
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

  // Its execution ledger is in the team's database; the platform's database has no agents schema.
  const teamDb = new URL(serverUrl);
  teamDb.pathname = `/${names.database}`;
  const rows = await sql<{ task_id: string; state: string }>(teamDb.toString(), 'SELECT task_id, state FROM agents.executions');
  assert.deepEqual(
    rows.map((r) => r.task_id),
    [task.id],
  );
  const [schemas] = await sql<{ n: number }>(
    disp.databaseUrl,
    `SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = 'agents'`,
  );
  assert.equal(schemas!.n, 0, "nothing of the worker's in the platform's database");

  // Its events are on the team events topic, each signed with the team's key; none on the platform's.
  const teamEvents = (await recordsOf(disp.topics.teamEvents())).map((r) => ({ r, env: decodeEnvelope(r) }));
  assert.ok(teamEvents.some(({ env }) => env.identity.taskId === task.id));
  for (const { r, env } of teamEvents) {
    assert.equal(env.identity.agentId, AGENT);
    const signature = r.headers[Headers.signature];
    assert.ok(signature, 'every team event is signed');
    assert.equal(decodeProtectedHeader(`${signature.split('.')[0]}..`).kid, eventKey.kid);
  }
  // The dispatcher believed every one of them (it completed the task, and refused none).
  assert.doesNotMatch(await (await fetch(`${disp.url}/metrics`)).text(), /^mesh_events_refused_total\{[^}]*\} [1-9]/m);
  const platformEvents = (await recordsOf(disp.topics.events())).map((r) => decodeEnvelope(r));
  assert.deepEqual(
    platformEvents.filter((e) => e.identity.agentId === AGENT),
    [],
    'none on the platform events topic',
  );

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

  // `mesh teams list`: the principal, its ACLs and the dispatcher's live binding.
  const t = await listed();
  assert.equal(t?.kafkaPrincipal, names.principal);
  assert.equal(t?.tenant, 'acme');
  assert.deepEqual(t?.agents, [AGENT]);
  assert.deepEqual(t?.toolAudiences, ['billing-tools']);
  assert.deepEqual(t?.keyIds, [eventKey.kid]);
  assert.equal(t?.revokedAt, null);
  assert.equal((t?.acls as unknown[]).length, 12);

  // SIGTERM drains and exits cleanly, as a team's deployment stops it.
  worker.child.kill('SIGTERM');
  assert.equal((await worker.exited).code, 0, output());
});

/** billing-tools trusting only the dispatcher's JWKS, for `audience`. */
async function jwksBillingTools(audience: string) {
  const b = await startBillingTools({
    ...loadBillingToolsConfig({
      DATABASE_URL: disp.databaseUrl,
      BILLING_TOOLS_JWKS_URL: `${disp.url}${ToolGrants.jwksPath}`,
      BILLING_TOOLS_TOKEN_ISSUER: ISSUER,
      BILLING_TOKEN_AUDIENCE: audience,
    }),
    BILLING_TOOLS_PORT: 0,
  });
  after(() => b.stop());
  return b;
}

/** The grant on the run command of `taskId`, read as the team's principal in its own worker group (nothing committed). */
async function grantOf(taskId: string): Promise<string> {
  const consumer = teamKafka(teamEnv, 'byo-hostile-worker').consumer({ groupId: new ConsumerGroups(disp.prefix).agentWorkers(AGENT) });
  let grant: string | undefined;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: disp.topics.commands(AGENT), fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        const g = message.headers?.[Headers.grant]?.toString();
        if (g && decodeJwt(g).task_id === taskId) grant = g;
      },
    });
    return await eventually(`the run command of ${taskId}`, async () => grant, 30_000, 100);
  } finally {
    await consumer.disconnect();
  }
}

/** A task the team's (stopped) worker has not answered: the dispatcher holds it, its command waits on the topic. */
let pending: Task;

test("a hostile team worker's own grant gets no tool token beyond the team's audiences; tokens it signs itself are refused", async () => {
  const [billing, billingEu] = [await jwksBillingTools('billing-tools'), await jwksBillingTools('billing-tools-eu')];
  const a2a = await a2aClient(disp.url, AGENT, 'JSONRPC', KEYS.acme);
  pending = (await a2a.sendMessage(textMessage('four more little words', {}, false))) as Task;
  const grant = await grantOf(pending.id);
  assert.equal(decodeJwt(grant).tenant, 'acme');

  // The team was given billing-tools only.
  const refused = await exchange(grant, 'billing-tools-eu');
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.equal(refused.body.error, 'invalid_target');
  const given = await exchange(grant, 'billing-tools');
  assert.equal(given.status, 200, JSON.stringify(given.body));
  const token = given.body.access_token as string;
  assert.deepEqual([decodeJwt(token).tenant, decodeJwt(token).agent_id], ['acme', AGENT]);
  assert.notEqual(await initializeWith(billing.mcpUrl, token), 401, 'its own audience takes it');
  assert.equal(await initializeWith(billingEu.mcpUrl, token), 401, 'another audience refuses it');

  // The team's event key signs its events, nothing else: a token of another tenant it signs with it
  // is no tool token, and no grant either (the dispatcher knows the key, as an event key only).
  const key = await importJWK(eventKey, 'EdDSA');
  const claims = { tenant: 'globex', agent_id: AGENT, task_id: pending.id };
  const forge = (typ: string, audience: string) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', kid: eventKey.kid!, typ })
      .setIssuer(ISSUER)
      .setAudience(audience)
      .setSubject('bob')
      .setJti(`forged-${typ}`)
      .setIssuedAt()
      .setExpirationTime('60s')
      .sign(key);
  assert.equal(await initializeWith(billing.mcpUrl, await forge(ToolGrants.accessTokenTyp, 'billing-tools')), 401);
  const forgedGrant = await exchange(await forge(ToolGrants.grantTyp, `${ISSUER}${ToolGrants.tokenPath}`), 'billing-tools');
  assert.equal(forgedGrant.status, 400, JSON.stringify(forgedGrant.body));
  assert.equal(forgedGrant.body.error, 'invalid_grant');
});

test('after `mesh teams revoke` the binding shows revoked and the worker no longer logs in: no task of its agent completes', async () => {
  const revoked = await meshProcess([...platform, 'teams', 'revoke', team], { TOPIC_PREFIX: disp.prefix });
  assert.equal(revoked.code, 0, revoked.err);
  assert.match(revoked.out, /binding revoked/);
  assert.match(revoked.out, new RegExp(`the database ${names.database} and its role stay`));
  const t = await listed();
  assert.ok(t?.revokedAt, `the binding is revoked: ${JSON.stringify(t)}`);
  assert.deepEqual(t?.acls, []);

  // The team's worker starts again with the same env file: the broker refuses its login and it dies.
  const { worker, output } = await startWorker();
  const { code } = await worker.exited;
  assert.notEqual(code, 0, output());
  assert.match(output(), new RegExp(`refused principal ${names.username}: authentication failed`));

  // Neither the task that waited nor a new one is completed.
  const a2a = await a2aClient(disp.url, AGENT, 'JSONRPC', KEYS.acme);
  const fresh = (await a2a.sendMessage(textMessage('after the revoke', {}, false))) as Task;
  for (const id of [pending.id, fresh.id]) {
    const state = (await a2a.getTask({ id, tenant: '', historyLength: undefined })).status?.state;
    assert.notEqual(state, TaskState.TASK_STATE_COMPLETED, id);
  }
});

/** POST /oauth/token exchanging `subjectToken` for `resource`. */
function exchange(subjectToken: string, resource: string) {
  return exchangeGrant(`${disp.url}${ToolGrants.tokenPath}`, subjectToken, { resource });
}
