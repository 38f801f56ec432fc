// MIGRATE_ONLY=true (the chart's migration Job): each app migrates its schema and exits 0 without
// Kafka (the brokers given here are unreachable) or HTTP; an unreachable database exits 1 with one line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { freshDatabase, sql } from '../support/infra.js';
import { repoRoot } from '../support/processes.js';

const run = (app: string, env: Record<string, string>) =>
  new Promise<{ code: number; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(repoRoot, `apps/${app}/dist/main.js`)],
      { env: { PATH: process.env.PATH, MIGRATE_ONLY: 'true', KAFKA_BROKERS: '127.0.0.1:1', ...env }, timeout: 60000 },
      (err, _stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });

test('each app migrates its schema and exits 0 with MIGRATE_ONLY=true, without Kafka', async () => {
  const url = await freshDatabase('migrate-only');
  for (const [app, schema] of [
    ['directory', 'directory'],
    ['dispatcher', 'dispatcher'],
    ['agents', 'agents'],
  ] as const) {
    const r = await run(app, { DATABASE_URL: url });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`${app}: migrations applied`));
    const tables = await sql(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [schema]);
    assert.ok(tables.length > 0, `${app} created tables in ${schema}`);
  }
});

test('an unreachable database makes the migration exit 1 with one line', async () => {
  const r = await run('agents', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
  assert.equal(r.code, 1);
  assert.match(r.stderr.trim(), /^agents: migration failed: /);
  assert.equal(r.stderr.trim().split('\n').length, 1);
});
