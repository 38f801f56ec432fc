// `npm run bench:ledgers`: what Postgres spends on a tool turn's ledger statements alone — no
// Kafka, no MCP, no other process on the cores but this one and Postgres. Turns loop through the
// agents runtime's own ledgers (PostgresExecutionLedger, PostgresEffectLedger, on a data source
// opened as the runtime opens it): claim the execution, claim the tool call's effect, wait
// `toolMs` (the tool), record the call's result, finish the execution with the final events. Two
// loads: 48 turns in flight (about the rate of bench:agents' tool scenario, ~700 turns/s, so its
// batch sizes) and 256 (as many as it has). Per turn: Postgres CPU (all its processes, from
// /proc), this process's CPU, commits (pg_stat_database) and WAL bytes; medians of BENCH_ROUNDS
// rounds with their spread. Commits and WAL bytes do not move with the host's speed.
// BENCH_LEDGER_BESIDE=cpu|memory runs one busy process per core beside it (a tight loop, or one
// that walks 400 MB), to see what sharing the cores does to Postgres' cost per turn.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { AGENTS_SCHEMA, agentsMigrations, PostgresExecutionLedger } from '@mesh/agent-runtime';
import { openServiceDatabase } from '@mesh/database';
import { PostgresEffectLedger } from '@mesh/tool-gateway';
import { cpuMs, infraCpuMs } from './process-cpu.mjs';
import { machine, measuredCommit } from './run-facts.mjs';
import { round3, spread } from './stats.mjs';
import { adminDatabaseUrl, integer, integers, oneOf, text } from './settings.mjs';

const root = new URL('../', import.meta.url).pathname;
const adminUrl = adminDatabaseUrl().toString();
const rounds = integer('BENCH_ROUNDS', 3);
const turns = integer('BENCH_LEDGER_TURNS', 10_000);
// 48 in flight: about the tool scenario's rate (700 turns/s, small batches); 256: as many as it has.
const inFlights = integers('BENCH_LEDGER_IN_FLIGHT', [48, 256], { min: 1 });
const toolMs = integer('BENCH_LEDGER_TOOL_MS', 50, { min: 0 });
const resultFile = text('BENCH_LEDGERS_FILE', `${root}bench/results/ledgers.json`);
const owner = 'bench-ledgers';
const leaseMs = 30_000;
const beside = oneOf('BENCH_LEDGER_BESIDE', 'nothing', ['nothing', 'cpu', 'memory']);
const LOOPS = {
  cpu: 'for (;;) {}',
  memory: 'const a = new Float64Array(5e7); for (;;) for (let i = 0; i < a.length; i += 8) a[i] += 1;',
};
const neighbours = LOOPS[beside] ? cpus().map(() => spawn(process.execPath, ['-e', LOOPS[beside]], { stdio: 'ignore' })) : [];

const commit = measuredCommit(); // before the results are written
const database = `mesh_bench_ledgers_${Date.now().toString(36)}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const url = new URL(adminUrl);
url.pathname = `/${database}`;
const ds = await openServiceDatabase({ url: url.toString(), schema: AGENTS_SCHEMA, entities: [], migrations: agentsMigrations });

/** Commits and WAL position of the bench database, from the admin connection (not counted). */
async function pgCounters() {
  const { rows } = await admin.query(
    `SELECT xact_commit::bigint AS commits, pg_current_wal_lsn() - '0/0'::pg_lsn AS wal FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  return { commits: Number(rows[0].commits), wal: Number(rows[0].wal) };
}

/** One tool turn's ledger work, as the runtime does it for a turn that calls one tool once. */
async function turn(executions, effects) {
  const taskId = randomUUID();
  const contextId = randomUUID();
  const executionId = `acme:${taskId}:1`;
  const identity = {
    tenant: 'acme',
    agentId: 'echo-agent',
    taskId,
    contextId,
    messageId: randomUUID(),
    executionId,
    subject: 'alice',
    actor: 'apikey:demo…',
  };
  const input = { messageId: identity.messageId, role: 'ROLE_USER', parts: [{ text: `/wait ${toolMs}` }] };
  const claimed = await executions.claim(
    { executionId, tenant: 'acme', agentId: 'echo-agent', taskId, contextId, turn: 1, input },
    owner,
    leaseMs,
  );
  if (claimed.kind !== 'claimed') throw new Error(`execution ${executionId} not claimed: ${claimed.kind}`);
  const key = `${executionId}:mcp__bench__wait:0`;
  const effect = await effects.claim(
    {
      key,
      tenant: 'acme',
      taskId,
      executionId,
      tool: 'mcp__bench__wait',
      argsHash: 'h'.repeat(43),
      args: { ms: toolMs },
      sideEffect: false,
      owner,
    },
    leaseMs,
  );
  if (effect.kind !== 'claimed') throw new Error(`effect ${key} not claimed: ${effect.kind}`);
  if (toolMs > 0) await new Promise((r) => setTimeout(r, toolMs));
  const text = `waited ${toolMs} ms`;
  await effects.complete(key, owner, 'ok', { text });
  const events = [
    {
      kind: 'task.artifact',
      identity,
      body: { seq: 1, artifact: { artifactId: `${executionId}:0`, name: 'echo', parts: [{ text }] }, lastChunk: true },
    },
    { kind: 'task.status', identity, body: { seq: 2, state: 'TASK_STATE_COMPLETED', final: true } },
  ];
  if (!(await executions.finish(executionId, owner, { state: 'TASK_STATE_COMPLETED', events })))
    throw new Error(`execution ${executionId} not finished`);
}

/** `n` turns with `inFlight` running at once. */
async function run(executions, effects, n, inFlight) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, n) }, async () => {
      while (next < n) {
        next += 1;
        await turn(executions, effects);
      }
    }),
  );
}

const scenarios = [];
try {
  const executions = new PostgresExecutionLedger(ds);
  const effects = new PostgresEffectLedger(ds);
  await run(executions, effects, Math.min(2_000, turns), 256); // warm-up: pool connections, JIT
  for (const inFlight of inFlights) {
    const results = [];
    for (let round = 1; round <= rounds; round++) {
      const before = { infra: infraCpuMs(), self: cpuMs(process.pid), pg: await pgCounters(), t: performance.now() };
      await run(executions, effects, turns, inFlight);
      const after = { infra: infraCpuMs(), self: cpuMs(process.pid), pg: await pgCounters(), t: performance.now() };
      const r = {
        round,
        seconds: round3((after.t - before.t) / 1000),
        turnsPerSec: Math.round(turns / ((after.t - before.t) / 1000)),
        cpuMsPerTurn: {
          postgres: round3((after.infra.postgres - before.infra.postgres) / turns),
          bench: round3((after.self - before.self) / turns),
        },
        commitsPerTurn: round3((after.pg.commits - before.pg.commits) / turns),
        walBytesPerTurn: Math.round((after.pg.wal - before.pg.wal) / turns),
      };
      results.push(r);
      console.error(JSON.stringify({ inFlight, ...r }));
    }
    scenarios.push({
      inFlight,
      rounds: results,
      summary: {
        postgresCpuMsPerTurn: spread(results.map((r) => r.cpuMsPerTurn.postgres)),
        benchCpuMsPerTurn: spread(results.map((r) => r.cpuMsPerTurn.bench)),
        commitsPerTurn: spread(results.map((r) => r.commitsPerTurn)),
        walBytesPerTurn: spread(results.map((r) => r.walBytesPerTurn)),
        turnsPerSec: spread(results.map((r) => r.turnsPerSec)),
      },
    });
  }
} finally {
  for (const n of neighbours) n.kill('SIGKILL');
  await ds.destroy();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
}

const out = {
  date: new Date().toISOString(),
  machine: machine(),
  commit,
  command: 'npm run bench:ledgers',
  load: { turnsPerRound: turns, toolMs, rounds, beside },
  scenarios,
};
writeFileSync(resultFile, `${JSON.stringify(out, null, 2)}\n`);
console.log(
  JSON.stringify(
    scenarios.map((x) => ({ inFlight: x.inFlight, ...x.summary })),
    null,
    2,
  ),
);
