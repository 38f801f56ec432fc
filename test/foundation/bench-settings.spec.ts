// bench/settings.mjs reads every setting the benchmarks take: a value that is not what the setting
// takes must stop a run before it starts anything (exit 2, the setting named), never become a NaN
// or a silently different figure in bench/results. Each reader is checked on values generated from
// what it accepts, and each benchmark entry point on one wrong setting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { repoRoot } from '../support/processes.js';

const settings = join(repoRoot, 'bench', 'settings.mjs');

/** Runs `expr` (over `s`, the settings module) in a process of its own with `env`, and `args` after a script name. */
function read(expr: string, env: Record<string, string> = {}, args: string[] = []) {
  const code = `const s = await import(${JSON.stringify(settings)}); console.log(JSON.stringify(${expr}));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code, '--', 'bench-script', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  return { status: r.status, value: r.status === 0 ? (JSON.parse(r.stdout) as unknown) : undefined, stderr: r.stderr };
}

test('an unset or empty setting gives the fallback; a valid one its value', () => {
  assert.deepEqual(read(`s.integer('X', 7)`).value, 7);
  assert.deepEqual(read(`s.integer('X', 7)`, { X: '' }).value, 7);
  assert.deepEqual(read(`s.integer('X', 7)`, { X: '12' }).value, 12);
  assert.deepEqual(read(`s.integer('X', 7, { min: 0 })`, { X: '0' }).value, 0);
  assert.deepEqual(read(`s.integers('X', [1])`, { X: '150, 0,600' }).value, [150, 0, 600]);
  assert.deepEqual(read(`s.number('X', 5, { min: 0.1 })`, { X: '0.5' }).value, 0.5);
  assert.deepEqual(read(`s.oneOf('X', undefined, ['alone', 'tool']) ?? null`).value, null);
  assert.deepEqual(read(`s.oneOf('X', undefined, ['alone', 'tool'])`, { X: 'tool' }).value, 'tool');
  assert.deepEqual(read(`s.kafkaBrokers()`).value, ['127.0.0.1:9092']);
  assert.deepEqual(read(`s.kafkaBrokers()`, { KAFKA_BROKERS: 'a:1,b.example:29092' }).value, ['a:1', 'b.example:29092']);
  assert.deepEqual(read(`s.adminDatabaseUrl().toString()`).value, 'postgres://postgres@127.0.0.1:5432/postgres');
  assert.deepEqual(read(`[s.integerOption('n', 3), s.option('url')]`, {}, ['--n', '9', '--url=http://x/']).value, [9, 'http://x/']);
  assert.deepEqual(read(`s.integerOption('n', 3)`, {}, ['--n=4']).value, 4);
});

test('the broker a run measured on: the given principal, else the local broker admin, else none', () => {
  const home = mkdtempSync(join(tmpdir(), 'bench-kafka-home-'));
  try {
    const facts = `[s.kafkaFacts(), process.env.KAFKA_USERNAME ?? null, process.env.KAFKA_PASSWORD ?? null]`;
    assert.deepEqual(read(facts, { KAFKA_HOME_DIR: home }).value, [{ brokers: ['127.0.0.1:9092'], authentication: 'none' }, null, null]);
    writeFileSync(join(home, 'credentials.env'), 'KAFKA_BROKER_PASSWORD=b\nKAFKA_ADMIN_PASSWORD=adminpw\n');
    assert.deepEqual(read(facts, { KAFKA_HOME_DIR: home }).value, [
      { brokers: ['127.0.0.1:9092'], authentication: 'SASL/SCRAM-SHA-512 as mesh-admin' },
      'mesh-admin',
      'adminpw',
    ]);
    assert.deepEqual(read(facts, { KAFKA_HOME_DIR: home, KAFKA_AUTH: 'none' }).value, [
      { brokers: ['127.0.0.1:9092'], authentication: 'none' },
      null,
      null,
    ]);
    assert.deepEqual(
      read(facts, { KAFKA_HOME_DIR: home, KAFKA_USERNAME: 'u', KAFKA_PASSWORD: 'p', KAFKA_SASL_MECHANISM: 'scram-sha-256' }).value,
      [{ brokers: ['127.0.0.1:9092'], authentication: 'SASL/SCRAM-SHA-256 as u' }, 'u', 'p'],
    );
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('a whole-number setting refuses anything but a whole number in range, naming it', () => {
  // Generated: any string that is not digits only, or digits out of [1, 1000].
  const notWhole = fc.string({ minLength: 1 }).filter((v) => !/^\d+$/.test(v) && v.trim() !== '' && !v.includes('\0'));
  const outOfRange = fc.oneof(fc.constant('0'), fc.integer({ min: 1001, max: 2 ** 40 }).map(String), fc.constant('9'.repeat(30)));
  fc.assert(
    fc.property(fc.oneof(notWhole, outOfRange), (v) => {
      const r = read(`s.integer('BENCH_X', 3, { max: 1000 })`, { BENCH_X: v });
      assert.equal(r.status, 2, `${JSON.stringify(v)} was taken as ${JSON.stringify(r.value)}`);
      assert.ok(r.stderr.startsWith(`bench: BENCH_X=${JSON.stringify(v)} is not an integer from 1 to 1000`), r.stderr);
    }),
    { numRuns: 25 },
  );
});

test('lists, numbers, choices, brokers, the database URL and options refuse what they do not take', () => {
  const refused: Array<[string, Record<string, string>, string[], RegExp]> = [
    [`s.integers('L', [1])`, { L: '1,,2' }, [], /^bench: L="1,,2" is not an integer ≥ 0/],
    [`s.integers('L', [1], { min: 1 })`, { L: '1,0' }, [], /^bench: L="1,0" is not an integer ≥ 1/],
    [`s.number('N', 1)`, { N: '1e3' }, [], /^bench: N="1e3" is not a number ≥ 0/],
    [`s.number('N', 1, { min: 0.1 })`, { N: '0.01' }, [], /is not a number ≥ 0.1/],
    [`s.oneOf('O', 'json', ['json', 'sse'])`, { O: 'JSON' }, [], /^bench: O="JSON" is not one of json, sse/],
    [
      `s.kafkaBrokers()`,
      { KAFKA_BROKERS: 'localhost' },
      [],
      /^bench: KAFKA_BROKERS="localhost" is not a comma-separated list of host:port/,
    ],
    [`s.kafkaBrokers()`, { KAFKA_BROKERS: 'a:1,' }, [], /KAFKA_BROKERS/],
    [`s.adminDatabaseUrl()`, { TEST_DATABASE_ADMIN_URL: 'mysql://root@localhost/x' }, [], /is not a postgres:\/\/ URL/],
    [`s.adminDatabaseUrl()`, { TEST_DATABASE_ADMIN_URL: '127.0.0.1:5432' }, [], /is not a postgres:\/\/ URL/],
    [`s.integerOption('repeat', 3)`, {}, ['--repeat', 'x'], /^bench: --repeat="x" is not an integer ≥ 1/],
    [`s.integerOption('repeat', 3)`, {}, ['--repeat'], /^bench: --repeat needs a value/],
    [`s.option('client')`, {}, ['--client', '--json'], /^bench: --client needs a value/],
  ];
  for (const [expr, env, args, message] of refused) {
    const r = read(expr, env, args);
    assert.equal(r.status, 2, `${expr} ${JSON.stringify(env)} ${args.join(' ')} was taken as ${JSON.stringify(r.value)}`);
    assert.match(r.stderr, message);
  }
});

test('every benchmark stops on a wrong setting before it starts anything', () => {
  // Each would otherwise start brokers' clients, servers or databases; none may be reached.
  const runs: Array<[string, Record<string, string>, string[], string]> = [
    ['dispatch.mjs', { BENCH_ROUNDS: '0' }, [], 'BENCH_ROUNDS'],
    ['dispatch.mjs', { BENCH_DISPATCHER_PROCESSES: 'two' }, [], 'BENCH_DISPATCHER_PROCESSES'],
    ['dispatch-load.mjs', { BENCH_LOAD_RATES: '150,fast' }, [], 'BENCH_LOAD_RATES'],
    ['dispatch-stages.mjs', { BENCH_DURATION_S: '2' }, [], 'BENCH_DURATION_S'],
    ['dispatch-stages.mjs', { BENCH_CPU_PROFILE_OF: 'dispatcher' }, [], 'BENCH_CPU_PROFILE_OF'],
    ['agents.mjs', { BENCH_ONLY: 'both' }, [], 'BENCH_ONLY'],
    ['agents.mjs', { BENCH_MCP_RESPONSE: 'stream' }, [], 'BENCH_MCP_RESPONSE'],
    ['ledgers.mjs', { BENCH_LEDGER_BESIDE: 'disk' }, [], 'BENCH_LEDGER_BESIDE'],
    ['soak.mjs', { SOAK_DURATION_S: '10m' }, ['--short'], 'SOAK_DURATION_S'],
    ['directory.bench.mjs', { TEST_DATABASE_ADMIN_URL: 'not a url' }, [], 'TEST_DATABASE_ADMIN_URL'],
    ['bus.bench.mjs', { KAFKA_BROKERS: '127.0.0.1' }, [], 'KAFKA_BROKERS'],
    ['mcp-pair.mjs', {}, ['--concurrency=-1'], '--concurrency'],
  ];
  for (const [script, env, args, name] of runs) {
    const r = spawnSync(process.execPath, [join(repoRoot, 'bench', script), ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 60_000,
    });
    assert.equal(r.status, 2, `${script} with ${JSON.stringify(env)} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
    assert.ok(r.stderr.startsWith(`bench: ${name}=`), `${script}: ${r.stderr}`);
  }
});
