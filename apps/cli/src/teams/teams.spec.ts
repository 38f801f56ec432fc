import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { teamAcls } from './team-acls.js';
import { checkedAgents, checkedTenant, teamNames } from './team-names.js';
import { renderEnvFile, writeEnvFile } from './team-env-file.js';

test('team names: principal, database and role; a bad name, agent id or tenant is a usage error', () => {
  assert.deepEqual(teamNames('acme-words'), {
    name: 'acme-words',
    username: 'team-acme-words',
    principal: 'User:team-acme-words',
    database: 'mesh_team_acme_words',
    role: 'team_acme_words',
  });
  for (const bad of ['', '-x', 'Acme', 'a_b', 'a'.repeat(42), 'a;drop'])
    assert.throws(
      () => teamNames(bad),
      (e: { exitCode?: number }) => e.exitCode === 2,
      bad,
    );
  assert.equal(teamNames('a'.repeat(41)).name.length, 41);
  assert.deepEqual(checkedAgents(['a1', 'a1', 'b1']), ['a1', 'b1']);
  assert.throws(() => checkedAgents([]), /at least one agent/);
  assert.throws(() => checkedAgents(['A1']), /invalid agent id "A1"/);
  assert.throws(() => checkedTenant('Acme'), /invalid tenant "Acme"/);
});

test("a team's ACLs: per agent its commands (read), group (read), dead letters (create, write, read); team events and heartbeats (write)", () => {
  const lines = teamAcls('p.', ['a1']).map((a) => `${a.resourceType} ${a.resourceName} ${a.operation}`);
  assert.deepEqual(lines, [
    'TOPIC p.mesh.agent.a1.commands READ',
    'TOPIC p.mesh.agent.a1.commands DESCRIBE',
    'GROUP p.agents.a1 READ',
    'GROUP p.agents.a1 DESCRIBE',
    'TOPIC p.mesh.agent.a1.commands.dlq CREATE',
    'TOPIC p.mesh.agent.a1.commands.dlq WRITE',
    'TOPIC p.mesh.agent.a1.commands.dlq READ',
    'TOPIC p.mesh.agent.a1.commands.dlq DESCRIBE',
    'TOPIC p.mesh.team.events WRITE',
    'TOPIC p.mesh.team.events DESCRIBE',
    'TOPIC p.mesh.directory.heartbeats WRITE',
    'TOPIC p.mesh.directory.heartbeats DESCRIBE',
  ]);
  assert.equal(teamAcls('', ['a1', 'b1']).length, 20);
  assert.ok(teamAcls('', ['a1']).every((a) => !a.resourceName.includes('task.events')));
});

test('the env file: parseable back (a JSON key included), 0600, never overwritten', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-team-env-'));
  try {
    const vars = { KAFKA_USERNAME: 'team-x', AGENTS_EVENT_KEY: JSON.stringify({ kty: 'OKP', crv: 'Ed25519', d: 'abc', kid: 'k' }) };
    assert.deepEqual({ ...parseEnv(renderEnvFile(vars, ['a comment'])) }, vars);
    const path = join(dir, 'team.env');
    writeEnvFile(path, vars, []);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.throws(() => writeEnvFile(path, { A: 'b' }, []), /exists: the team's env file is never overwritten/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
