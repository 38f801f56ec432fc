// `mesh teams` as an operator runs it (a process) against the run's authenticated broker and Postgres:
// what a team gets (a SCRAM principal with its ACLs, its own database, an event key, a 0600 env file),
// what it does not (the platform's schemas), refusals that create nothing, the rollback of a failure
// midway, and revoke. The dispatcher's binding step is skipped (--no-dispatcher) except where a
// stand-in endpoint checks the request it sends and the rollback of its refusal.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { createKafka, AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from '@mesh/bus';
import { scramUserExists, teamAcls, teamNames } from '@mesh/app-cli';
import { eventually, freshDatabase, sql, testRun, uniquePrefix } from '../support/infra.js';
import { canLogIn, cleanUpTeamAtEnd, createTeam, envFolder, meshProcess, readEnvFile, uniqueTeamName } from '../support/teams.js';

const prefix = uniquePrefix('teams-cli');
/** The server's maintenance database: the run's own database is made per spec (freshDatabase). */
const serverUrl = (() => {
  const u = new URL(testRun().databaseUrl);
  u.pathname = '/postgres';
  return u.toString();
})();
const dir = await envFolder();
const alpha = uniqueTeamName('alpha');
const beta = uniqueTeamName('beta');
const adminKafka = {
  brokers: testRun().brokers,
  sasl: { mechanism: 'scram-sha-512' as const, username: process.env.KAFKA_USERNAME!, password: process.env.KAFKA_PASSWORD! },
};
const admin = createKafka({ brokers: testRun().brokers, clientId: 'teams-spec-admin' }).admin();
await admin.connect();
after(() => admin.disconnect());

/** The ACLs the broker holds for `principal`, as `TYPE name OPERATION` lines. */
async function aclsOf(principal: string): Promise<string[]> {
  const res = await admin.describeAcls({
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    principal,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  const name = (e: Record<string, string | number>, v: number) => Object.entries(e).find(([, n]) => n === v)![0];
  return res.resources
    .flatMap((r) =>
      r.acls.map(
        (a) =>
          `${name(AclResourceTypes, r.resourceType)} ${r.resourceName} ${name(AclOperationTypes, a.operation)} ${name(ResourcePatternTypes, r.resourcePatternType)} ${name(AclPermissionTypes, a.permissionType)} ${a.host}`,
      ),
    )
    .sort();
}
const expectedAcls = (agents: string[]) =>
  teamAcls(prefix, agents)
    .map((a) => `${a.resourceType} ${a.resourceName} ${a.operation} LITERAL ALLOW *`)
    .sort();

/** The run's Postgres as another role (trust authentication: any role connects; privileges decide). */
const asRole = (databaseUrl: string, role: string) => {
  const u = new URL(databaseUrl);
  u.username = role;
  u.password = '';
  return u.toString();
};

const a = await createTeam(alpha, { tenant: 'acme', agents: ['a1'], prefix, dir });
const b = await createTeam(beta, { tenant: 'globex', agents: ['b1'], prefix, dir });

test('create: the env file (0600) holds the settings; stdout names what was created and no secret', () => {
  assert.equal(statSync(a.file).mode & 0o777, 0o600);
  assert.equal(a.env.KAFKA_BROKERS, testRun().brokers.join(','));
  assert.equal(a.env.KAFKA_SASL_MECHANISM, 'scram-sha-512');
  assert.equal(a.env.KAFKA_USERNAME, `team-${alpha}`);
  assert.ok(a.env.KAFKA_PASSWORD && a.env.KAFKA_PASSWORD.length >= 40);
  assert.equal(a.env.TOPIC_PREFIX, prefix);
  assert.equal(a.env.AGENTS_RUN, 'a1');
  assert.ok(a.env.AGENTS_DIRECTORY_URL);
  const db = new URL(a.env.DATABASE_URL!);
  assert.equal(db.pathname, `/${teamNames(alpha).database}`);
  assert.equal(db.username, teamNames(alpha).role);
  assert.ok(db.password.length >= 40);
  const out = a.run.out + a.run.err;
  assert.match(a.run.out, new RegExp(`User:team-${alpha} \\(SCRAM-SHA-512\\), 12 ACLs for agents a1`));
  assert.match(a.run.out, new RegExp(`${teamNames(alpha).database} owned by role ${teamNames(alpha).role}`));
  assert.match(a.run.out, /binding +NOT registered \(--no-dispatcher\)/);
  for (const secret of [a.env.KAFKA_PASSWORD!, db.password, JSON.parse(a.env.AGENTS_EVENT_KEY!).d])
    assert.ok(!out.includes(secret), 'a secret was printed');
});

test('create: the event key is a private Ed25519 JWK whose kid is its thumbprint, printed as the key id', async () => {
  const jwk = JSON.parse(a.env.AGENTS_EVENT_KEY!) as JWK;
  assert.equal(jwk.kty, 'OKP');
  assert.equal(jwk.crv, 'Ed25519');
  assert.ok(jwk.d, 'the private part');
  assert.equal(jwk.kid, await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk.x! }));
  assert.match(a.run.out, new RegExp(`event key +${jwk.kid} \\(Ed25519\\)`));
  assert.notEqual(jwk.kid, (JSON.parse(b.env.AGENTS_EVENT_KEY!) as JWK).kid);
});

test("create: the file's SCRAM credentials log in; the principal holds exactly the team's LITERAL ACLs", async () => {
  assert.equal(await canLogIn(a.env), true);
  assert.equal(await canLogIn(b.env), true);
  assert.equal(await canLogIn({ ...a.env, KAFKA_PASSWORD: b.env.KAFKA_PASSWORD! }), false, "beta's password is not alpha's");
  assert.deepEqual(await aclsOf(`User:team-${alpha}`), expectedAcls(['a1']));
  assert.deepEqual(await aclsOf(`User:team-${beta}`), expectedAcls(['b1']));
  assert.ok(expectedAcls(['a1']).includes(`TOPIC ${prefix}mesh.agent.a1.commands READ LITERAL ALLOW *`));
  assert.ok(
    expectedAcls(['a1']).every((l) => !l.includes('mesh.task.events')),
    'the platform events topic is not granted',
  );
});

test("create: the team's database takes the file's DATABASE_URL; its role owns only it and has no rights on the platform's schemas", async () => {
  const owned = await sql<{ who: string; db: string }>(a.env.DATABASE_URL!, 'SELECT current_user AS who, current_database() AS db');
  assert.deepEqual(owned, [{ who: teamNames(alpha).role, db: teamNames(alpha).database }]);
  // It may create its runtime's schema in its own database.
  await sql(a.env.DATABASE_URL!, 'CREATE SCHEMA agents; CREATE TABLE agents.t (id int)');
  const role = await sql<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
    serverUrl,
    'SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = $1',
    [teamNames(alpha).role],
  );
  assert.deepEqual(role, [{ rolsuper: false, rolcreatedb: false, rolcreaterole: false }]);
  // The platform's database (a fresh one with the services' schemas), seen as the team's role.
  const platform = await freshDatabase('teams-platform');
  await sql(
    platform,
    'CREATE SCHEMA dispatcher; CREATE SCHEMA agents; CREATE SCHEMA directory; CREATE TABLE dispatcher.tasks (id int); INSERT INTO dispatcher.tasks VALUES (1)',
  );
  const privileges = await sql<Record<string, boolean>>(
    platform,
    `SELECT bool_or(has_schema_privilege($1, s, 'USAGE')) AS usage, bool_or(has_schema_privilege($1, s, 'CREATE')) AS create
       FROM unnest(ARRAY['dispatcher', 'agents', 'directory']) AS s`,
    [teamNames(alpha).role],
  );
  assert.deepEqual(privileges, [{ usage: false, create: false }]);
  await assert.rejects(
    sql(asRole(platform, teamNames(alpha).role), 'SELECT * FROM dispatcher.tasks'),
    /permission denied for schema dispatcher/,
  );
  // No one else may connect to a team's database (a role with a password would be refused there).
  const connect = await sql<{ other: boolean; own: boolean }>(
    serverUrl,
    `SELECT has_database_privilege($1, $3, 'CONNECT') AS other, has_database_privilege($2, $3, 'CONNECT') AS own`,
    [teamNames(beta).role, teamNames(alpha).role, teamNames(alpha).database],
  );
  assert.deepEqual(connect, [{ other: false, own: true }]);
});

test('create: a taken name is refused and nothing is created or changed; bad input is a usage error', async () => {
  const file = join(dir, 'again.env');
  const again = await meshProcess(['teams', 'create', alpha, '--tenant', 'acme', '--agent', 'a2', '--out', file, '--no-dispatcher'], {
    TOPIC_PREFIX: prefix,
  });
  assert.equal(again.code, 1, again.err);
  assert.match(
    again.err,
    new RegExp(`team ${alpha} exists: the Kafka SCRAM user team-${alpha}; 12 ACL\\(s\\) of User:team-${alpha}; the database`),
  );
  assert.match(again.err, /nothing was created/);
  assert.equal(existsSync(file), false);
  assert.deepEqual(await aclsOf(`User:team-${alpha}`), expectedAcls(['a1']), 'no ACL for a2');
  assert.equal(await canLogIn(a.env), true, 'the password is unchanged');
  // An existing env file is never overwritten, and refused before anything is created.
  const fresh = uniqueTeamName('gamma');
  cleanUpTeamAtEnd(fresh, prefix);
  const taken = await meshProcess(['teams', 'create', fresh, '--tenant', 'acme', '--agent', 'g1', '--out', a.file, '--no-dispatcher'], {
    TOPIC_PREFIX: prefix,
  });
  assert.equal(taken.code, 2);
  assert.match(taken.err, /exists: the team's env file is never overwritten/);
  assert.equal(await scramUserExists(adminKafka, `team-${fresh}`), false);
  assert.deepEqual(readEnvFile(a.file), a.env);
  for (const [args, message] of [
    [['teams', 'create', 'Bad_Name', '--tenant', 'acme', '--agent', 'a1'], /invalid team name "Bad_Name"/],
    [['teams', 'create', fresh, '--tenant', 'acme', '--agent', 'Not An Id'], /invalid agent id "Not An Id"/],
    [['teams', 'create', fresh, '--tenant', 'ACME', '--agent', 'a1'], /invalid tenant "ACME"/],
  ] as const) {
    const r = await meshProcess([...args, '--out', join(dir, 'bad.env'), '--no-dispatcher'], { TOPIC_PREFIX: prefix });
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, message);
  }
  const noAdmin = await meshProcess(
    ['teams', 'create', fresh, '--tenant', 'acme', '--agent', 'a1', '--out', join(dir, 'x.env'), '--no-dispatcher'],
    {
      TOPIC_PREFIX: prefix,
      KAFKA_USERNAME: '',
    },
  );
  assert.equal(noAdmin.code, 2);
  assert.match(noAdmin.err, /needs the Kafka admin principal: set KAFKA_USERNAME and KAFKA_PASSWORD/);
  // A refused admin principal, an unreachable broker or Postgres: one line, and nothing created.
  const args = ['teams', 'create', fresh, '--tenant', 'acme', '--agent', 'g1', '--out', join(dir, 'x.env'), '--no-dispatcher'];
  const refused = await meshProcess(args, { TOPIC_PREFIX: prefix, KAFKA_PASSWORD: 'not-the-password' });
  assert.equal(refused.code, 1);
  assert.match(refused.err, /refused the admin principal \S+: SASL authentication failed \(check KAFKA_USERNAME and KAFKA_PASSWORD\)/);
  const noBroker = await meshProcess(['--brokers', '127.0.0.1:9', ...args], { TOPIC_PREFIX: prefix });
  assert.equal(noBroker.code, 3, noBroker.err);
  assert.match(noBroker.err, /^mesh: Kafka at 127\.0\.0\.1:9: /);
  const noPostgres = await meshProcess([...args, '--database-admin-url', 'postgres://postgres@127.0.0.1:9/postgres'], {
    TOPIC_PREFIX: prefix,
  });
  assert.equal(noPostgres.code, 3, noPostgres.err);
  assert.match(noPostgres.err, /cannot reach Postgres at 127\.0\.0\.1:9/);
  assert.equal(await scramUserExists(adminKafka, `team-${fresh}`), false);
  assert.deepEqual(await aclsOf(`User:team-${fresh}`), []);
  assert.equal(existsSync(join(dir, 'x.env')), false);
});

test('create: a failure midway (Postgres refuses the role) removes the SCRAM user and ACLs it had created', async () => {
  // An admin URL whose role may look (so the checks pass) but not create roles: the database step fails after the Kafka steps.
  const weak = `mesh_teams_weak_${testRun().run}`;
  await sql(serverUrl, `CREATE ROLE ${weak} LOGIN`);
  after(() => sql(serverUrl, `DROP ROLE IF EXISTS ${weak}`));
  const name = uniqueTeamName('delta');
  cleanUpTeamAtEnd(name, prefix);
  const file = join(dir, `${name}.env`);
  const r = await meshProcess(
    [
      'teams',
      'create',
      name,
      '--tenant',
      'acme',
      '--agent',
      'd1',
      '--out',
      file,
      '--no-dispatcher',
      '--database-admin-url',
      asRole(serverUrl, weak),
    ],
    { TOPIC_PREFIX: prefix },
  );
  assert.equal(r.code, 1, r.err);
  assert.match(r.err, /creating the SCRAM-SHA-512 user/, 'the Kafka steps ran first');
  assert.match(
    r.err,
    new RegExp(`creating team ${name} failed: Postgres at .*permission denied to create role — what this run created was removed`),
  );
  assert.equal(await scramUserExists(adminKafka, `team-${name}`), false);
  assert.deepEqual(await aclsOf(`User:team-${name}`), []);
  assert.equal(existsSync(file), false);
  const [role] = await sql<{ n: number }>(serverUrl, 'SELECT count(*)::int AS n FROM pg_roles WHERE rolname = $1', [teamNames(name).role]);
  assert.equal(role!.n, 0);
});

/** A stand-in for the dispatcher's /ops/teams (the real endpoint is another part): records requests, answers `status`. */
async function opsTeamsEndpoint(status: number, teams: unknown[] = []) {
  const requests: Array<{ method: string; url: string; auth: string | undefined; body: unknown }> = [];
  const read = async (req: IncomingMessage) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    return text ? JSON.parse(text) : undefined;
  };
  const server = createServer((req, res) => {
    void read(req).then((body) => {
      requests.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') return res.end(JSON.stringify({ teams }));
      if (req.method === 'DELETE') return res.writeHead(204).end();
      res.writeHead(status).end(JSON.stringify(status === 200 ? { team: body } : { error: { message: 'agent d1 belongs to team other' } }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  after(() => new Promise<void>((ok) => server.close(() => ok())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

test('the binding is PUT with the ops token, the public key only; its refusal removes everything; list and revoke ask the dispatcher', async () => {
  const ok = await opsTeamsEndpoint(200);
  const name = uniqueTeamName('epsilon');
  cleanUpTeamAtEnd(name, prefix);
  const file = join(dir, `${name}.env`);
  const r = await meshProcess(
    ['teams', 'create', name, '--tenant', 'acme', '--agent', 'e1', '--agent', 'e2', '--tool-audience', 'billing-tools', '--out', file],
    { TOPIC_PREFIX: prefix, MESH_DISPATCHER_URL: ok.url, MESH_OPS_TOKEN: 'teams-ops-token' },
  );
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, new RegExp(`binding +registered at ${ok.url}`));
  const put = ok.requests.find((q) => q.method === 'PUT')!;
  assert.equal(put.url, `/ops/teams/${name}`);
  assert.equal(put.auth, 'Bearer teams-ops-token');
  const priv = JSON.parse(readEnvFile(file).AGENTS_EVENT_KEY!) as JWK;
  const { d: _d, ...pub } = priv;
  assert.deepEqual(put.body, {
    tenant: 'acme',
    agents: ['e1', 'e2'],
    eventKeys: { keys: [pub] },
    toolAudiences: ['billing-tools'],
    kafkaPrincipal: `User:team-${name}`,
  });

  const refusing = await opsTeamsEndpoint(409);
  const other = uniqueTeamName('zeta');
  cleanUpTeamAtEnd(other, prefix);
  const failed = await meshProcess(['teams', 'create', other, '--tenant', 'acme', '--agent', 'd1', '--out', join(dir, `${other}.env`)], {
    TOPIC_PREFIX: prefix,
    MESH_DISPATCHER_URL: refusing.url,
    MESH_OPS_TOKEN: 'teams-ops-token',
  });
  assert.equal(failed.code, 1);
  assert.match(
    failed.err,
    /dispatcher answered 409 to PUT \/ops\/teams\/\S+: agent d1 belongs to team other — what this run created was removed/,
  );
  assert.equal(await scramUserExists(adminKafka, `team-${other}`), false);
  assert.deepEqual(await aclsOf(`User:team-${other}`), []);
  const [left] = await sql<{ dbs: number; roles: number }>(
    serverUrl,
    'SELECT (SELECT count(*)::int FROM pg_database WHERE datname = $1) AS dbs, (SELECT count(*)::int FROM pg_roles WHERE rolname = $2) AS roles',
    [teamNames(other).database, teamNames(other).role],
  );
  assert.deepEqual(left, { dbs: 0, roles: 0 });
  assert.equal(existsSync(join(dir, `${other}.env`)), false);

  // list: who the dispatcher binds (tenant, agents, audiences, keys, created/revoked) with the broker's ACLs.
  const binding = {
    name,
    tenant: 'acme',
    agents: ['e1', 'e2'],
    toolAudiences: ['billing-tools'],
    kafkaPrincipal: `User:team-${name}`,
    keyIds: [priv.kid],
    createdAt: '2026-01-01T00:00:00.000Z',
    revokedAt: null,
  };
  const listing = await opsTeamsEndpoint(200, [binding]);
  const env = { TOPIC_PREFIX: prefix, MESH_DISPATCHER_URL: listing.url, MESH_OPS_TOKEN: 'teams-ops-token' };
  const list = await meshProcess(['teams', 'list'], env);
  assert.equal(list.code, 0, list.err);
  assert.match(list.out, new RegExp(`^${name}  User:team-${name}  tenant acme  agents e1,e2  tool audiences billing-tools$`, 'm'));
  assert.match(list.out, new RegExp(`^  keys ${priv.kid}  created 2026-01-01T00:00:00.000Z  live$`, 'm'));
  assert.match(list.out, new RegExp(`ACL ALLOW READ GROUP ${prefix.replace(/\./g, '\\.')}agents\\.e2 \\(LITERAL\\)`));
  assert.equal(listing.requests[0]?.auth, 'Bearer teams-ops-token');
  // revoke: the binding is deleted with the ops token too.
  const revoke = await meshProcess(['teams', 'revoke', name], env);
  assert.equal(revoke.code, 0, revoke.err);
  assert.match(revoke.out, /binding revoked/);
  const del = listing.requests.find((q) => q.method === 'DELETE');
  assert.deepEqual([del?.url, del?.auth], [`/ops/teams/${name}`, 'Bearer teams-ops-token']);
});

test('list shows each team principal with its ACLs; revoke removes the ACLs and the login, and keeps the database', async () => {
  const list = await meshProcess(['--json', 'teams', 'list', '--no-dispatcher'], { TOPIC_PREFIX: prefix });
  assert.equal(list.code, 0, list.err);
  const teams = (JSON.parse(list.out) as { teams: Array<{ name: string; kafkaPrincipal: string; acls: unknown[] }> }).teams;
  const listedBeta = teams.find((t) => t.name === beta)!;
  assert.equal(listedBeta.kafkaPrincipal, `User:team-${beta}`);
  assert.equal(listedBeta.acls.length, 12);
  const human = await meshProcess(['teams', 'list', '--no-dispatcher'], { TOPIC_PREFIX: prefix });
  assert.match(human.out, new RegExp(`ACL ALLOW READ TOPIC ${prefix.replace(/\./g, '\\.')}mesh\\.agent\\.b1\\.commands \\(LITERAL\\)`));
  assert.match(human.out, /--no-dispatcher: the dispatcher was not asked/);

  const revoke = await meshProcess(['teams', 'revoke', beta, '--no-dispatcher'], { TOPIC_PREFIX: prefix });
  assert.equal(revoke.code, 0, revoke.err);
  assert.match(revoke.out, new RegExp(`team ${beta} revoked: 12 ACL\\(s\\) of User:team-${beta} deleted, SCRAM user deleted`));
  assert.match(revoke.out, new RegExp(`the database ${teamNames(beta).database} and its role stay`));
  assert.deepEqual(await aclsOf(`User:team-${beta}`), []);
  await eventually('the revoked login refused', async () => !(await canLogIn(b.env)), 10000, 250);
  assert.equal(await canLogIn(a.env), true, 'alpha is untouched');
  const [db] = await sql<{ n: number }>(serverUrl, 'SELECT count(*)::int AS n FROM pg_database WHERE datname = $1', [
    teamNames(beta).database,
  ]);
  assert.equal(db!.n, 1, 'the database stays');
  const twice = await meshProcess(['teams', 'revoke', beta, '--no-dispatcher'], { TOPIC_PREFIX: prefix });
  assert.equal(twice.code, 1);
  assert.match(twice.err, new RegExp(`no team ${beta}`));
});
