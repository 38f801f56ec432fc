import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/processes.js';

// The short chaos run of issue #9 inside `npm test`: scripts/chaos.mjs with 300 tasks (every 10th
// to the remote echo agent through the bridge) and one fault of each kind (the remote agent twice), on a broker of its own (ports 19192/19193, not the 19092 of a manual
// `npm run chaos`) and ports from 18280. scripts/run-tests.mjs runs this file last, so its broker
// stop and Postgres restart never overlap another spec.

interface ChaosReport {
  tasks: number;
  accepted: number;
  lost: number;
  finalStates: Record<string, number>;
  refundsApplied: number;
  duplicates: number;
  missingRefunds: number;
  refundsOfUnsuccessful: number;
  delegation: { trees: number; canceledByCaller: number; children: number; duplicateChildren: number; childrenOutlivingParent: number };
  regressions: number;
  remote: {
    tasks: number;
    accepted: number;
    lost: number;
    finalStates: Record<string, number>;
    remoteTasksCreated: number;
    duplicates: number;
    unplaced: number;
    completedWithoutRemoteTask: number;
    echoMismatches: number;
    regressions: number;
    kills: number;
    bridgeKills: number;
  };
  lag: number | null;
  push: { configs: number; expectedEvents: number; missing: number; regressions: number; differingDuplicates: number } | null;
  faults: Array<{ at: number; what: string }>;
  scheduleComplete: boolean;
  checks: Record<string, boolean>;
  notes: string[];
  passed: boolean;
}

const dir = mkdtempSync(join(tmpdir(), 'mesh-chaos-test-'));
const reportFile = join(dir, 'report.json');
let stderr = '';
let stdout = '';
const chaos = spawn(process.execPath, ['scripts/chaos.mjs', '--tasks=300'], {
  cwd: repoRoot,
  env: {
    ...process.env,
    CHAOS_KAFKA_PORT: '19192',
    CHAOS_KAFKA_CONTROLLER_PORT: '19193',
    CHAOS_KAFKA_HOME_DIR: join(dir, 'kafka'),
    CHAOS_PORT_BASE: '18280',
    CHAOS_REPORT_FILE: reportFile,
    // One fault of each kind, while the 300 tasks are spread over 40 s.
    CHAOS_MIN_SUBMIT_MS: '40000',
    CHAOS_WORKER_KILLS: '1',
    CHAOS_KILL_EVERY_MS: '3000',
    CHAOS_DISPATCHER_KILL_AT_MS: '5000',
    CHAOS_RECEIVER_OUTAGE_AT_MS: '12000',
    CHAOS_BROKER_RESTART_AT_MS: '20000',
    CHAOS_POSTGRES_RESTART_AT_MS: '34000',
    // Bounded so that a stuck task ends in the script's own report (which lists every task that did
    // not complete, with its rows) well before the test's timeout; a normal run settles in seconds.
    CHAOS_SETTLE_TIMEOUT_MS: '90000',
    CHAOS_PUSH_SETTLE_TIMEOUT_MS: '45000',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
chaos.stdout.on('data', (d) => (stdout += d));
chaos.stderr.on('data', (d) => (stderr += d));
// 'close', not 'exit': the report (one long JSON line) may still be in the pipe when the process exits.
const exited = new Promise<number | null>((resolve) => chaos.on('close', (code) => resolve(code)));
after(async () => {
  // SIGTERM, not SIGKILL: the script stops its broker and children and makes sure Postgres runs.
  if (chaos.exitCode === null) chaos.kill('SIGTERM');
  await exited;
  rmSync(dir, { recursive: true, force: true });
});

// If the script still runs after WATCHDOG_MS it is stopped (SIGTERM: it cleans up) and the test fails
// with the script's own log, so that a hang says where it hung instead of a bare test timeout.
const WATCHDOG_MS = 330000;

test(
  'chaos: 300 refund tasks (a quarter through triage-agent, a tenth to a remote agent) under one fault of each kind — nothing lost, nothing done twice',
  { timeout: WATCHDOG_MS + 60000 },
  async (t) => {
    let watchdog: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<'hung'>((resolve) => (watchdog = setTimeout(() => resolve('hung'), WATCHDOG_MS))),
    ]).finally(() => clearTimeout(watchdog));
    if (code === 'hung') {
      chaos.kill('SIGTERM');
      await exited;
      assert.fail(`the chaos script still ran after ${WATCHDOG_MS} ms; its last log lines:\n${stderr.split('\n').slice(-80).join('\n')}`);
    }
    // The script's summary (faults, push figures, PASS/FAIL per invariant) into the test output.
    t.diagnostic(stderr.slice(stderr.lastIndexOf('\nchaos ') + 1).trim());
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as ChaosReport;
    const context = `exit ${code}\n${stderr.split('\n').slice(-60).join('\n')}`;
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').at(-1)!), report, 'stdout ends with the report as one JSON line');
    for (const [check, ok] of Object.entries(report.checks)) assert.ok(ok, `${check}\n${context}`);
    assert.equal(code, 0, context);
    assert.equal(report.passed, true);
    assert.equal(report.accepted, 300);
    assert.equal(report.lost, 0);
    assert.equal(report.duplicates, 0);
    assert.equal(report.missingRefunds, 0);
    assert.equal(report.refundsOfUnsuccessful, 0);
    // One refund per completed refund or triage task (a remote-bound one echoes, it refunds nothing);
    // a triage tree its caller canceled keeps a refund its child made first.
    const completedRefundTasks = report.finalStates.TASK_STATE_COMPLETED! - (report.remote.finalStates.TASK_STATE_COMPLETED ?? 0);
    assert.ok(report.refundsApplied >= completedRefundTasks, `${report.refundsApplied} refunds`);
    assert.ok(report.refundsApplied <= report.accepted);
    assert.ok(report.delegation.trees > 0 && report.delegation.children > 0, 'delegation was exercised');
    assert.equal(report.delegation.duplicateChildren, 0);
    assert.equal(report.delegation.childrenOutlivingParent, 0);
    assert.equal(report.regressions, 0);
    // Remote-bound tasks: all terminal, one remote task at most per mesh task, the echo as artifact.
    assert.equal(report.remote.tasks, 30);
    assert.equal(report.remote.accepted, 30);
    assert.equal(report.remote.lost, 0);
    assert.ok((report.remote.finalStates.TASK_STATE_COMPLETED ?? 0) > 0, JSON.stringify(report.remote.finalStates));
    assert.ok(report.remote.remoteTasksCreated >= report.remote.finalStates.TASK_STATE_COMPLETED!);
    assert.equal(report.remote.duplicates, 0);
    assert.equal(report.remote.unplaced, 0);
    assert.equal(report.remote.completedWithoutRemoteTask, 0);
    assert.equal(report.remote.echoMismatches, 0);
    assert.equal(report.remote.regressions, 0);
    assert.ok(report.remote.kills >= 2 && report.remote.bridgeKills >= 1, JSON.stringify(report.remote));
    assert.equal(report.lag, 0);
    assert.ok(report.push && report.push.configs > 0 && report.push.expectedEvents > 0, 'push subscriptions were exercised');
    assert.equal(report.push.missing, 0);
    assert.equal(report.push.regressions, 0);
    assert.equal(report.push.differingDuplicates, 0);
    const faults = report.faults.map((f) => f.what).join('\n');
    for (const kind of [
      /SIGKILL worker/,
      /SIGKILL dispatcher/,
      /push receiver-a down/,
      /broker stop/,
      /broker started again/,
      /SIGKILL remote-agent/,
      /remote-agent restarted/,
      /SIGKILL bridge/,
      /bridge restarted/,
    ])
      assert.match(faults, kind);
    // The Postgres restart runs where the script may do it (root, local cluster); otherwise the report says why not.
    assert.ok(/Postgres back after/.test(faults) || report.notes.some((n) => n.startsWith('Postgres restart: skipped')), faults);
    assert.equal(report.scheduleComplete, true);
  },
);
