#!/usr/bin/env node
/* global Headers */
// npm run chaos [-- --tasks=N] [-- --cluster] — N refund tasks (default 5,000) through the official A2A client
// while a fault schedule runs, then the invariants. Bounded (stops by itself), loopback only, exit 1
// when an invariant fails. Output: progress, a summary and one PASS/FAIL line per invariant on
// stderr; the whole report as ONE JSON line on stdout (pretty in CHAOS_REPORT_FILE when set).
// docs/proof.md has the figures; test/chaos/chaos.integration-spec.ts runs a short version in npm test.
//
// Own infrastructure: a Kafka broker of its own (CHAOS_KAFKA_PORT 19092, CHAOS_KAFKA_CONTROLLER_PORT
// 19093, CHAOS_KAFKA_HOME_DIR /tmp/mesh-chaos-kafka; never 9092, never a port something listens on)
// and a database of its own on the machine's Postgres (dropped at the end; CHAOS_KEEP_DB=1 keeps it).
// The broker authenticates as scripts/kafka.sh's do (KAFKA_AUTH=none: not): dispatchers connect as
// mesh-dispatcher, workers and the bridge as mesh-agents, this script as mesh-admin.
// CHAOS_LOG_DIR=<dir> keeps every child process's output there (<name>.log).
// Processes: billing-tools (scripts/chaos-billing.mjs: every 2 s one issue_refund hangs 4 s, past
// the workers' 1.5 s tool timeout), 2 dispatchers, CHAOS_WORKERS (2) agents workers running
// refund-agent, 2 push receivers in this process (receiver-b answers 503 to every 7th request).
// Ports from CHAOS_PORT_BASE (18180): dispatchers +0/+1, billing +3, receivers +6/+7, workers +10….
//
// Tasks: 3 tenants, one duplicate-charged invoice each, a third each blocking / non-blocking /
// streaming, CHAOS_CONCURRENCY (96) at a time, spread over both dispatchers, retried with the same
// messageId when a dispatcher dies; 429/503 answered by waiting Retry-After. Every 5th task carries
// a push config in SendMessage; every 15th (non-blocking) gets one by CreateTaskPushNotificationConfig
// after the accept. CHAOS_MIN_SUBMIT_MS spreads a short run over the fault schedule.
//
// Fault schedule (CHAOS_FAULTS=worker,dispatcher,receiver,broker,postgres selects; times from the
// start of submitting): SIGKILL a worker every CHAOS_KILL_EVERY_MS (3000) while submitting, at most
// CHAOS_WORKER_KILLS (unbounded), and restart it. Once each, in this order, even after the last task
// was submitted: SIGKILL dispatcher-2 at CHAOS_DISPATCHER_KILL_AT_MS (8000) and restart it; push
// receiver-a down for 5 s at CHAOS_RECEIVER_OUTAGE_AT_MS (14000); stop the broker and start it again
// with its data at CHAOS_BROKER_RESTART_AT_MS (20000); restart Postgres (`pg_ctlcluster <cluster>
// restart`, fast mode) at CHAOS_POSTGRES_RESTART_AT_MS (32000) — on when running as root with a
// local cluster on the database's port, CHAOS_RESTART_POSTGRES=0 skips it (the report says why).
// Postgres is always started again and waited for (pg_isready), on SIGINT/SIGTERM too.
// --cluster: a three-broker KRaft cluster of its own instead (CHAOS_KAFKA_CLUSTER_PORT 29192, +2, +4;
// CHAOS_KAFKA_HOME_DIR /tmp/mesh-chaos-cluster; topics replicated 3 times, min.insync.replicas=2), and
// in place of the broker restart the `leader` fault: every CHAOS_LEADER_KILL_EVERY_MS (15000) while
// submitting, at least twice, SIGKILL the node leading partition 0 of the commands topic, then of
// the events topic, alternately, and start it again on its data after CHAOS_LEADER_DOWN_MS (5000).
//
// Streaming clients build their client over the resumable-streams extension's StreamResumption: after
// a drop they resubscribe on the other dispatcher with Last-Event-ID, and every event id must follow
// the one before (no gap, no repeat) across resumptions.
// Remote agents (CHAOS_REMOTE_EVERY, 10; 0: none): every 10th task (never a triage one) goes to
// remote-echo-agent, a team's own A2A server (scripts/chaos-remote-agent.mjs, official SDK, port +4)
// served through a bridge worker (apps/bridge, BRIDGE_REMOTE_AGENTS, port +5, messageIdDedup). The
// remote streams, takes 200–800 ms per task (up to half before it names the task: a bridge killed
// then resends the messageId), answers an artifact `echo: <input>`, deduplicates on
// messageId and appends every task it creates (messageId → task) to a journal it reads back at
// start (in CHAOS_LOG_DIR when set). Fault `remote`: every CHAOS_REMOTE_KILL_EVERY_MS (7000) while
// submitting, once a remote task is in flight (waiting up to 3 s for one), SIGKILL the remote
// agent and restart it (at least twice), alternating with a SIGKILL and restart of the bridge
// worker (under the `worker` fault; at least once).
// Invariants: lost = 0 (every task accepted and terminal); refunds per task = exactly 1 for
// COMPLETED, 0 for FAILED/CANCELED/REJECTED; no state regression seen by a client (streams, polls);
// consumer lag of the work groups back to 0 (projector, workers, live groups); push: every event a
// subscription should get (read from the events topic: what the projector applied) arrived at least
// once and the final state agrees with GetTask, a repeated event id is the same delivery and one the
// dispatcher recorded, no state regression as received, token and credentials on every delivery;
// the whole fault schedule ran; no process exited unless the schedule killed it. Remote-bound
// tasks: every one accepted and terminal; at most one remote task per mesh task (the bridge's
// messageId is `mesh-{execution id}`: the remote's journal is counted by it), none the journal
// cannot place; a COMPLETED one's artifact echoes its input; no state regression seen by its caller.
// Reported too: remote tasks per final state (the remote's own store), sends, answers by dedup. And:
// final states, every task that did not complete with its rows (dispatcher, worker ledger, effects),
// dead letters, throttling by reason, the time from the last fault (and the last submission) until
// every task was terminal.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Kafka, logLevel } from 'kafkajs';
import { ensureTopics } from '@mesh/bus';
import { TopicDefinitions, TopicNames } from '@mesh/contract';
import { StreamResumption } from '@mesh/agent-sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { ChaosBroker, ChaosCluster, deadLetters, pushableEvents, workLag } from './chaos/broker.mjs';
import { readJournal } from './chaos/journal.mjs';
import { PushReceivers } from './chaos/push-receivers.mjs';
import { ensurePostgres, postgresRestartPlan, restartPostgres } from './chaos/postgres.mjs';

const root = new URL('..', import.meta.url).pathname;
const arg = (name, dflt) => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a ? a.slice(name.length + 3) : dflt;
};
const num = (name, dflt) => Number(process.env[name] ?? dflt);
const N = Number(arg('tasks', process.env.CHAOS_TASKS ?? 5000));
const WORKERS = num('CHAOS_WORKERS', 2);
const CONCURRENCY = num('CHAOS_CONCURRENCY', 96);
const KILL_EVERY = num('CHAOS_KILL_EVERY_MS', 3000);
// Delegation: every CHAOS_TRIAGE_EVERY-th task (0: none) goes to triage-agent, which delegates its refund
// to refund-agent and a question about a second invoice to invoice-agent; every
// CHAOS_TRIAGE_CANCEL_EVERY-th of those that is non-blocking is canceled by its caller 0.2–3 s after the accept.
const TRIAGE_EVERY = num('CHAOS_TRIAGE_EVERY', 4);
const TRIAGE_CANCEL_EVERY = num('CHAOS_TRIAGE_CANCEL_EVERY', 5);
const WORKER_KILLS = num('CHAOS_WORKER_KILLS', Infinity);
const MIN_SUBMIT_MS = num('CHAOS_MIN_SUBMIT_MS', 0);
const CLUSTER = process.argv.includes('--cluster');
// Remote agent: every CHAOS_REMOTE_EVERY-th task (0: none) goes to the remote echo agent through the bridge.
const REMOTE_EVERY = num('CHAOS_REMOTE_EVERY', 10);
const REMOTE_KILL_EVERY = num('CHAOS_REMOTE_KILL_EVERY_MS', 7000);
const REMOTE_ID = 'remote-echo-agent';
const DEFAULT_FAULTS = [
  'worker',
  'dispatcher',
  'receiver',
  CLUSTER ? 'leader' : 'broker',
  'postgres',
  ...(REMOTE_EVERY > 0 ? ['remote'] : []),
];
const FAULTS = new Set((process.env.CHAOS_FAULTS ?? DEFAULT_FAULTS.join(',')).split(',').map((f) => f.trim()));
const LEADER_KILL_EVERY = num('CHAOS_LEADER_KILL_EVERY_MS', 15000);
const LEADER_DOWN_MS = num('CHAOS_LEADER_DOWN_MS', 5000);
const SETTLE_TIMEOUT = num('CHAOS_SETTLE_TIMEOUT_MS', 300000);
const PUSH_SETTLE_TIMEOUT = num('CHAOS_PUSH_SETTLE_TIMEOUT_MS', 120000);
const PORT_BASE = num('CHAOS_PORT_BASE', 18180);
const broker = CLUSTER
  ? new ChaosCluster(root, {
      port: num('CHAOS_KAFKA_CLUSTER_PORT', 29192),
      home: process.env.CHAOS_KAFKA_HOME_DIR ?? '/tmp/mesh-chaos-cluster',
    })
  : new ChaosBroker(root, {
      port: num('CHAOS_KAFKA_PORT', 19092),
      controllerPort: num('CHAOS_KAFKA_CONTROLLER_PORT', 19093),
      home: process.env.CHAOS_KAFKA_HOME_DIR ?? '/tmp/mesh-chaos-kafka',
    });
if (broker.port === 9092) throw new Error('chaos never runs on the shared broker port 9092');

const run = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
const dbName = `mesh_chaos_${run}`;
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
const prefix = `chaos${run}.`;
const topics = new TopicNames(prefix);
const t0 = Date.now();
const log = (...a) => console.error(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);
const pgPlan = postgresRestartPlan(adminUrl);

const report = {
  startedAt: new Date(t0).toISOString(),
  tasks: N,
  accepted: 0,
  lost: N, // until counted
  finalStates: {},
  refundsApplied: 0,
  duplicates: 0,
  missingRefunds: 0,
  refundsOfUnsuccessful: 0,
  regressions: 0,
  regressionExamples: [],
  laterSubscriptionStartedLower: 0,
  laterSubscriptionExamples: [],
  lag: null,
  lagOfDeadInstances: {},
  deadLetters: {},
  push: null,
  throttled: {}, // "429 RATE_LIMITED" etc. → { n, firstAt, lastAt } (ms from the start)
  faults: [],
  scheduleComplete: false,
  recoveryMs: null,
  drainMs: null,
  notCompleted: [],
  // Streaming clients: events received, resumptions with Last-Event-ID, ids out of sequence.
  streams: { events: 0, resumed: 0, withoutId: 0, repeated: 0, gaps: 0, gapExamples: [] },
  unexpectedExits: [],
  notes: [],
  // Remote-bound tasks (remote-echo-agent through the bridge), checked against the remote's journal.
  remote: {
    tasks: 0,
    accepted: 0,
    lost: 0,
    finalStates: {},
    // From the remote's own record: tasks it created, their states, SendMessages it got, repeats it
    // answered with the first task, tasks a kill left unfinished (finished at its next start).
    remoteTasksCreated: 0,
    remoteTaskStates: {},
    sends: 0,
    answeredByDedup: 0,
    recoveredAtStart: 0,
    // Mesh tasks by the number of remote tasks created for them ({"1": n}: one each).
    remoteTasksPerMeshTask: {},
    duplicates: 0,
    unplaced: 0,
    completedWithoutRemoteTask: 0,
    echoMismatches: 0,
    regressions: 0,
    kills: 0,
    bridgeKills: 0,
    examples: [],
  },
  // Task trees (triage-agent): children created more than once, children open under a settled parent,
  // children that settled after their parent's cancel or failure, refunds per refund child.
  delegation: {
    trees: 0,
    canceledByCaller: 0,
    children: 0,
    duplicateChildren: 0,
    openChildrenOfSettledParents: 0,
    childrenOutlivingParent: 0,
    refundChildrenWithoutRefund: 0,
    // CancelTask answers of -32603 (a lock race reported instead of retried inside).
    cancelInternalErrors: 0,
    examples: [],
  },
};
let cleaningUp = false;

// --- Postgres of the chaos process itself: a pool (it reconnects after the restart) -----------
const withRetry = async (what, fn, ms = 60000) => {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > until) throw new Error(`${what}: ${err}`, { cause: err });
      await sleep(500);
    }
  }
};
const pool = (url) => {
  const p = new pg.Pool({ connectionString: url, max: 4 });
  p.on('error', () => undefined); // an idle client cut by the Postgres restart; the pool replaces it
  return p;
};
const adminPool = pool(adminUrl);
let dbPool;
const sql = async (text, params) => (await withRetry('query', () => dbPool.query(text, params))).rows;

// --- Children -----------------------------------------------------------------------------------
const children = new Set();
if (process.env.CHAOS_LOG_DIR) mkdirSync(process.env.CHAOS_LOG_DIR, { recursive: true });
function child(name, script, env) {
  const c = spawn(process.execPath, [script], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  c.name = name;
  children.add(c);
  c.on('exit', (code, signal) => {
    children.delete(c);
    // A process that was up and was not killed by the schedule or the cleanup: the apps must survive
    // every fault (a broker restart, a Postgres restart) without exiting.
    if (c.up && !c.killed && !cleaningUp)
      report.unexpectedExits.push({ name, code, signal, at: Date.now() - t0, log: c.tail.join('').slice(-1500) });
  });
  c.tail = [];
  // CHAOS_LOG_DIR keeps every child's whole output (one file per name, appended across restarts).
  const file = process.env.CHAOS_LOG_DIR ? createWriteStream(`${process.env.CHAOS_LOG_DIR}/${name}.log`, { flags: 'a' }) : undefined;
  // Log lines are JSON on stdout; a failure to start is one line on stderr: keep the tail of both.
  for (const stream of [c.stdout, c.stderr])
    stream.on('data', (d) => {
      file?.write(d);
      c.tail.push(String(d));
      if (c.tail.length > 20) c.tail.shift();
    });
  return c;
}
async function waitHttp(url, c, timeoutMs = 90000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (c?.exitCode != null) throw new Error(`${c.name} exited (${c.exitCode}): ${c.tail.join('').slice(-2000)}`);
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(2000) })).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(200);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}
const common = {
  KAFKA_BROKERS: broker.brokers,
  TOPIC_PREFIX: prefix,
  DATABASE_URL: dbUrl.toString(),
  LOG_LEVEL: 'warn',
  // On the cluster every topic the services create is replicated three times (min.insync.replicas=2).
  ...(CLUSTER ? { KAFKA_REPLICATION_FACTOR: '3' } : {}),
};
// Shared by the workers (they mint tool tokens) and billing-tools (it verifies them).
const toolTokenSecret = randomBytes(24).toString('base64url');
const dispatcherPorts = [PORT_BASE, PORT_BASE + 1];
const billingPort = PORT_BASE + 3;
const receiverPorts = [PORT_BASE + 6, PORT_BASE + 7];
const remotePort = PORT_BASE + 4;
const bridgePort = PORT_BASE + 5;
// The remote agent's journal and task store: kept with the logs, else in a directory removed at the end.
const remoteDir = process.env.CHAOS_LOG_DIR
  ? join(process.env.CHAOS_LOG_DIR, `remote-agent-${run}`)
  : mkdtempSync(join(tmpdir(), 'mesh-chaos-remote-'));
const remoteSpec = {
  id: REMOTE_ID,
  cardUrl: `http://127.0.0.1:${remotePort}/.well-known/agent-card.json`,
  visibility: 'public',
  messageIdDedup: true,
  allowLoopback: true, // the remote runs on loopback
  maxInFlight: 32,
  // A kill of the remote opens the breaker; short, so that admission refuses no task for long.
  breakerOpenMs: 2000,
  pollIntervalMs: 200,
};
const workerPort = (i) => PORT_BASE + 10 + i;
const spawnDispatcher = (i) =>
  child(`dispatcher-${i + 1}`, 'apps/dispatcher/dist/main.js', {
    ...common,
    ...broker.principal('dispatcher'),
    DISPATCHER_PORT: String(dispatcherPorts[i]),
    AUTH_API_KEYS: 'demo-acme=acme:alice,demo-globex=globex:bob,demo-initech=initech:carol',
    DISPATCHER_BLOCKING_TIMEOUT_MS: '20000',
    PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8', // the receivers are on loopback
    PUSH_BACKOFF_BASE_MS: '200',
    PUSH_BACKOFF_MAX_MS: '2000',
    PUSH_MAX_ATTEMPTS: '30',
  });
const spawnWorker = (i) =>
  child(`worker-${i + 1}`, 'apps/agents/dist/main.js', {
    ...common,
    ...broker.principal('agents'),
    AGENTS_PORT: String(workerPort(i)),
    AGENTS_RUN: TRIAGE_EVERY > 0 ? 'refund-agent,invoice-agent,triage-agent' : 'refund-agent',
    AGENTS_TOOL_TOKEN_SECRET: toolTokenSecret,
    AGENTS_WORKER_ID: `chaos-worker-${i + 1}-${Date.now()}`,
    AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: `http://127.0.0.1:${billingPort}/mcp`, requestTimeoutMs: 1500 } }),
    AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
    AGENTS_EXECUTION_LEASE_MS: '4000',
    AGENTS_RECONCILE_INTERVAL_MS: '500',
  });
const spawnRemote = () =>
  child('remote-agent', 'scripts/chaos-remote-agent.mjs', { CHAOS_REMOTE_PORT: String(remotePort), CHAOS_REMOTE_DIR: remoteDir });
const spawnBridge = () =>
  child('bridge', 'apps/bridge/dist/main.js', {
    ...common,
    ...broker.principal('agents'),
    AGENTS_PORT: String(bridgePort),
    AGENTS_RUN: REMOTE_ID,
    AGENTS_WORKER_ID: `chaos-bridge-${Date.now()}`,
    // No AGENTS_DIRECTORY_URL: no directory in the chaos run, the card is published on the cards topic below.
    BRIDGE_REMOTE_AGENTS: JSON.stringify([remoteSpec]),
    AGENTS_CONSUMER_SESSION_TIMEOUT_MS: '6000',
    AGENTS_EXECUTION_LEASE_MS: '4000',
    AGENTS_RECONCILE_INTERVAL_MS: '500',
  });
const dispatchers = [];
const workers = [];
const remotes = [];
const bridges = [];
/** Starts a child until its health answers; like a supervisor, starts it again when it exits during start (e.g. broker down). */
async function supervise(list, i, spawnIt, health) {
  for (let attempt = 1; ; attempt++) {
    list[i] = spawnIt(i);
    try {
      await waitHttp(health, list[i]);
      list[i].up = true;
      return;
    } catch (err) {
      if (attempt >= 15 || list[i].exitCode === null) throw err;
      await sleep(2000);
    }
  }
}
const startDispatcher = (i) => supervise(dispatchers, i, spawnDispatcher, `http://127.0.0.1:${dispatcherPorts[i]}/healthz`);
const startWorker = (i) => supervise(workers, i, spawnWorker, `http://127.0.0.1:${workerPort(i)}/healthz`);
const startRemote = () => supervise(remotes, 0, spawnRemote, `http://127.0.0.1:${remotePort}/healthz`);
// The bridge fetches the remote's card at start: while the remote is down it exits, and is started again.
const startBridge = () => supervise(bridges, 0, spawnBridge, `http://127.0.0.1:${bridgePort}/healthz`);

// --- States -------------------------------------------------------------------------------------
const STATE_NAMES = ['', 'SUBMITTED', 'WORKING', 'COMPLETED', 'FAILED', 'CANCELED', 'INPUT_REQUIRED', 'REJECTED', 'AUTH_REQUIRED'];
const stateName = (s) => (typeof s === 'string' ? s : STATE_NAMES[s] ? `TASK_STATE_${STATE_NAMES[s]}` : String(s));
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED', 'TASK_STATE_CANCELED']);
const ORDER = { TASK_STATE_SUBMITTED: 1, TASK_STATE_WORKING: 2, TASK_STATE_INPUT_REQUIRED: 2, TASK_STATE_AUTH_REQUIRED: 2 };
const rank = (s) => (TERMINAL.has(stateName(s)) ? 3 : (ORDER[stateName(s)] ?? 0));

// --- The official A2A client per (tenant key, dispatcher) -----------------------------------------
const clients = new Map();
/** A fetch with the tenant's token that waits out 429/503 Retry-After and sends again. */
const throttledFetch = (key) => async (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${key}`);
  for (let attempt = 0; ; attempt++) {
    const timeout = AbortSignal.timeout(30000);
    const res = await fetch(input, { ...init, headers, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
    const after = Number(res.headers.get('retry-after'));
    if ((res.status !== 429 && res.status !== 503) || !(after >= 0) || attempt >= 30) return res;
    const reason = /"reason"\s*:\s*"([A-Z_]+)"/.exec(await res.text())?.[1] ?? 'unknown';
    const seen = (report.throttled[`${res.status} ${reason}`] ??= { n: 0, firstAt: Date.now() - t0, lastAt: 0 });
    seen.n += 1;
    seen.lastAt = Date.now() - t0;
    await sleep(Math.max(100, after * 1000) * (0.5 + Math.random()));
  }
};
const factoryOver = (fetchImpl) =>
  new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
async function clientFor(key, port, agent = 'refund-agent') {
  const k = `${key}@${port}/${agent}`;
  if (!clients.has(k)) clients.set(k, await factoryOver(throttledFetch(key)).createFromUrl(`http://127.0.0.1:${port}/a2a/${agent}/`));
  return clients.get(k);
}
/**
 * A client whose fetch is a StreamResumption (the resumable-streams extension: it keeps each SSE
 * event's id and sends Last-Event-ID on reconnect), built from the dispatcher's card.
 */
const cards = new Map();
async function resumableClient(key, port, agent) {
  const k = `${port}/${agent}`;
  if (!cards.has(k)) cards.set(k, await (await clientFor(key, port, agent)).getAgentCard());
  const resumption = new StreamResumption(throttledFetch(key));
  return { resumption, client: await factoryOver(resumption.fetch).createFromAgentCard(cards.get(k)) };
}
/** Runs `fn(client, port)` against either dispatcher until it succeeds (a dispatcher may be down). */
async function onAnyDispatcher(t, fn, attempts = 40) {
  for (let attempt = 0; ; attempt++) {
    try {
      const port = dispatcherPorts[(t.i + attempt) % 2];
      return await fn(await clientFor(t.tenant[1], port, t.agent), port);
    } catch (err) {
      if (attempt >= attempts) throw err;
      // A dispatcher killed mid-call fails one attempt; more say something is stuck (and where).
      if (attempt >= 2) log(`task ${t.i}: attempt ${attempt + 1} failed: ${String(err).slice(0, 300)}`);
      await sleep(250 * Math.min(attempt + 1, 8));
    }
  }
}

// --- The run ------------------------------------------------------------------------------------
let failed = false;
let receivers;
let pgRestarted = false;

async function main() {
  log(
    `run ${run}: ${N} tasks, ${WORKERS} workers, concurrency ${CONCURRENCY}, own ${CLUSTER ? 'three-broker cluster' : 'broker'} on ${broker.brokers}`,
  );
  if (!FAULTS.has('postgres')) report.notes.push('Postgres restart: not in CHAOS_FAULTS');
  else if (pgPlan.skip) report.notes.push(`Postgres restart: skipped (${pgPlan.skip})`);
  if (DEFAULT_FAULTS.some((f) => !FAULTS.has(f))) report.notes.push(`faults limited to CHAOS_FAULTS=${[...FAULTS].join(',')}`);
  await broker.start();
  log('broker up');
  await adminPool.query(`CREATE DATABASE ${pg.escapeIdentifier(dbName)}`);
  dbPool = pool(dbUrl.toString());

  const billing = child('billing-tools', 'scripts/chaos-billing.mjs', {
    DATABASE_URL: dbUrl.toString(),
    BILLING_TOOLS_PORT: String(billingPort),
    BILLING_TOKEN_SECRET: toolTokenSecret,
    CHAOS_HANG_MS: '4000',
  });
  await waitHttp(`http://127.0.0.1:${billingPort}/healthz`, billing);
  billing.up = true;
  log('billing-tools up');
  // No directory in the chaos run: it stands in for it, as the owner of the cards and heartbeats topics.
  const definitions = new TopicDefinitions(topics);
  await ensureTopics(
    new Kafka({ brokers: broker.brokers.split(','), clientId: 'chaos-topics', logLevel: logLevel.NOTHING, ...broker.kafkaAuth() }),
    [definitions.cards(), definitions.heartbeats()],
  );
  await startDispatcher(0); // one after the other: the first creates the topics
  await startDispatcher(1);
  log('dispatchers up');
  for (let i = 0; i < WORKERS; i++) await startWorker(i);
  log('workers up');
  if (REMOTE_EVERY > 0) {
    await startRemote();
    await startBridge();
    log('remote agent and bridge up');
  }
  receivers = new PushReceivers(receiverPorts);
  await receivers.start();

  // The refund-agent record, as the directory would publish it.
  const kafka = new Kafka({ brokers: broker.brokers.split(','), clientId: 'chaos', logLevel: logLevel.NOTHING, ...broker.kafkaAuth() });
  const producer = kafka.producer();
  await producer.connect();
  const { refundAgent, invoiceAgent, triageAgent } = await import('@mesh/app-agents');
  const agents = TRIAGE_EVERY > 0 ? [refundAgent, invoiceAgent, triageAgent] : [refundAgent];
  // The remote agent's definition as the bridge builds it (its card fetched from the remote).
  if (REMOTE_EVERY > 0) agents.push(await (await import('@mesh/agent-runtime')).remoteAgent(remoteSpec));
  const records = agents.map((a) => ({
    id: a.id,
    tenant: 'acme',
    visibility: 'public',
    version: 1,
    card: {
      ...a.card,
      supportedInterfaces: [{ url: 'http://worker.invalid/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { ...a.card.capabilities, streaming: true, pushNotifications: true },
    },
    channel: { keyTemplate: a.channel.keyTemplate, partitions: a.channel.partitions },
    retired: false,
    updatedAt: new Date().toISOString(),
  }));
  await producer.send({ topic: topics.cards(), messages: records.map((r) => ({ key: r.id, value: JSON.stringify(r) })) });
  await producer.disconnect();
  for (const p of dispatcherPorts) for (const a of agents) await waitHttp(`http://127.0.0.1:${p}/a2a/${a.id}/.well-known/agent-card.json`);

  // One duplicate-charged invoice per task, across three tenants; a share of them with push.
  const tenants = [
    ['acme', 'demo-acme'],
    ['globex', 'demo-globex'],
    ['initech', 'demo-initech'],
  ];
  const tasks = Array.from({ length: N }, (_, i) => {
    const mode = ['blocking', 'nonblocking', 'streaming'][i % 3];
    const push = i % 5 === 0 ? 'send' : i % 15 === 1 ? 'create' : undefined; // i % 15 === 1 is non-blocking
    const triage = TRIAGE_EVERY > 0 && i % TRIAGE_EVERY === 0;
    const remote = !triage && REMOTE_EVERY > 0 && i % REMOTE_EVERY === REMOTE_EVERY - 1;
    const cancel = triage && mode === 'nonblocking' && TRIAGE_CANCEL_EVERY > 0 && (i / TRIAGE_EVERY) % TRIAGE_CANCEL_EVERY === 0;
    return {
      i,
      tenant: tenants[i % 3],
      invoice: `INV-${900000000 + i}`,
      agent: triage ? 'triage-agent' : remote ? REMOTE_ID : 'refund-agent',
      remote,
      // A triage task also asks about a second invoice (charged once): invoice-agent answers it.
      question: triage ? `INV-${800000000 + i}` : undefined,
      cancel,
      mode,
      messageId: randomUUID(),
      // A canceled task's later worker events are recorded without a push: it carries none.
      push: push &&
        !cancel && {
          how: push,
          configId: `cfg-${run}-${i}`,
          receiver: Math.floor(i / 5) % 2,
          token: `tok-${i}`,
          auth: i % 2 ? { scheme: 'Bearer', credentials: `push-secret-${i}` } : undefined,
        },
    };
  });
  /** Invoices of `tenants` numbered `ids`, `amountCents` EUR each, charged `charges` times. */
  const insertInvoices = (tenants, ids, amountCents, charges) =>
    sql(
      `INSERT INTO billing.invoices (tenant, invoice_id, customer, amount_cents, currency, charges) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[])`,
      [tenants, ids, ids.map(() => 'Chaos Customer'), ids.map(() => amountCents), ids.map(() => 'EUR'), ids.map(() => charges)],
    );
  for (let i = 0; i < N; i += 500) {
    const chunk = tasks.slice(i, i + 500).filter((t) => !t.remote); // the remote echoes; it refunds nothing
    await insertInvoices(
      chunk.map((t) => t.tenant[0]),
      chunk.map((t) => t.invoice),
      4200,
      2,
    );
    const asked = chunk.filter((t) => t.question);
    await insertInvoices(
      asked.map((t) => t.tenant[0]),
      asked.map((t) => t.question),
      1900,
      1,
    );
  }
  const pushConfig = (t) => ({
    tenant: '',
    id: t.push.configId,
    taskId: '',
    url: receivers.list[t.push.receiver].url(t.push.configId),
    token: t.push.token,
    authentication: t.push.auth,
  });
  const messageText = (t) =>
    t.remote
      ? `Echo this back, chaos task ${t.i} (${t.invoice}).`
      : t.question
        ? `I was charged twice on ${t.invoice}. Also, what is on ${t.question}?`
        : `I was charged twice, please refund ${t.invoice}.`;
  const message = (t) => ({
    tenant: '',
    message: {
      messageId: t.messageId, // the same id on every retry: the dispatcher dedupes it
      role: 1,
      parts: [
        {
          content: {
            $case: 'text',
            value: messageText(t),
          },
          metadata: undefined,
          filename: '',
          mediaType: 'text/plain',
        },
      ],
      contextId: '',
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: {
      acceptedOutputModes: [],
      returnImmediately: t.mode !== 'blocking',
      taskPushNotificationConfig: t.push?.how === 'send' ? pushConfig(t) : undefined,
    },
    metadata: undefined,
  });
  // Per observer, in order: each streaming subscription is its own observer; a non-streaming
  // task's answer and the later GetTask polls are one. "States never regress in any subscriber's
  // stream" is checked per observer; a later subscription (on another replica) starting below what
  // an earlier one saw is counted apart: streams carry worker events before the projection stores
  // them, and a new subscription starts from the stored task.
  const seenStates = new Map(); // `${task id}|${observer}` → states seen, in order
  const saw = (id, s, observer = 'poll') =>
    s !== undefined && seenStates.set(`${id}|${observer}`, [...(seenStates.get(`${id}|${observer}`) ?? []), stateName(s)]);
  let streams = 0;

  // --- Fault schedule ----------------------------------------------------------------------------
  let submitting = true;
  let lastFault = Date.now();
  const fault = (what) => {
    report.faults.push({ at: Date.now() - t0, what });
    log(what);
  };
  let oneOffs = [
    {
      kind: 'dispatcher',
      at: num('CHAOS_DISPATCHER_KILL_AT_MS', 8000),
      run: async () => {
        dispatchers[1].kill('SIGKILL');
        fault('SIGKILL dispatcher-2');
        await sleep(1000);
        await startDispatcher(1);
        fault('dispatcher-2 restarted');
      },
    },
    {
      kind: 'receiver',
      at: num('CHAOS_RECEIVER_OUTAGE_AT_MS', 14000),
      run: async () => {
        fault('push receiver-a down');
        await receivers.outage(5000);
        fault('push receiver-a up');
      },
    },
    {
      kind: 'broker',
      at: num('CHAOS_BROKER_RESTART_AT_MS', 20000),
      run: async () => {
        fault('broker stop');
        await broker.stop();
        await sleep(3000);
        await broker.startAgain();
        fault('broker started again (data kept)');
      },
    },
  ];
  if (pgPlan.cluster) {
    oneOffs.push({
      kind: 'postgres',
      at: num('CHAOS_POSTGRES_RESTART_AT_MS', 32000),
      run: async () => {
        fault(`Postgres restart (pg_ctlcluster ${pgPlan.cluster.join(' ')} restart)`);
        pgRestarted = true;
        const ms = await restartPostgres(pgPlan);
        fault(`Postgres back after ${ms} ms`);
      },
    });
  }
  oneOffs = oneOffs.filter((f) => FAULTS.has(f.kind));
  // Worker kills and the one-off faults run side by side; the one-offs run to the end of the
  // schedule even when submitting ends first.
  const started = Date.now();
  let kills = 0;
  const killLoop = (async () => {
    while (FAULTS.has('worker') && kills < WORKER_KILLS && (submitting || kills === 0)) {
      await sleep(KILL_EVERY);
      const w = kills++ % workers.length;
      workers[w].kill('SIGKILL');
      fault(`SIGKILL worker-${w + 1}`);
      await startWorker(w).catch((e) => log(`worker-${w + 1} restart: ${e}`));
      lastFault = Date.now();
    }
  })();
  // Cluster: SIGKILL the node leading the commands topic, then the events topic, and so on, while
  // submitting (at least twice), each started again on its data after LEADER_DOWN_MS.
  let leaderKills = 0;
  let leaderKillsFailed = 0;
  const leaderLoop = (async () => {
    while (CLUSTER && FAULTS.has('leader') && (submitting || leaderKills < 2)) {
      await sleep(LEADER_KILL_EVERY);
      const topic = leaderKills++ % 2 === 0 ? topics.commands('refund-agent') : topics.events();
      try {
        fault(`SIGKILL the leader of ${topic}[0]`);
        const port = await broker.killLeader(kafka, topic, LEADER_DOWN_MS);
        fault(`broker ${port} started again (data kept)`);
      } catch (err) {
        leaderKillsFailed += 1;
        fault(`leader kill failed: ${err}`);
        report.notes.push(`a leader kill failed: ${err}`);
      }
      lastFault = Date.now();
    }
  })();
  let oneOffsFailed = 0;
  const oneOffLoop = (async () => {
    for (const f of oneOffs.sort((a, b) => a.at - b.at)) {
      await sleep(Math.max(0, started + f.at - Date.now()));
      try {
        await f.run();
      } catch (err) {
        oneOffsFailed += 1;
        fault(`fault failed: ${err}`);
        report.notes.push(`a fault failed: ${err}`);
      }
      lastFault = Date.now();
    }
  })();
  // Remote: SIGKILL the remote agent and restart it, then the bridge worker, alternately, while
  // submitting and until each was killed at least twice (remote) and once (bridge).
  const remoteSteps = REMOTE_EVERY > 0 ? [FAULTS.has('remote') && 'remote', FAULTS.has('worker') && 'bridge'].filter(Boolean) : [];
  const remoteKillsOwed = () =>
    (remoteSteps.includes('remote') && report.remote.kills < 2) || (remoteSteps.includes('bridge') && report.remote.bridgeKills < 1);
  let remoteFaultsFailed = 0;
  /** Waits (up to 3 s) until the remote works on a task: a kill then cuts a remote task short. */
  const remoteBusy = async () => {
    for (const until = Date.now() + 3000; Date.now() < until; await sleep(50)) {
      const health = await fetch(`http://127.0.0.1:${remotePort}/healthz`, { signal: AbortSignal.timeout(1000) })
        .then((res) => res.json())
        .catch(() => ({}));
      if (health.inFlight > 0) return health.inFlight;
    }
    return 0;
  };
  const remoteLoop = (async () => {
    for (let k = 0; remoteSteps.length > 0 && (submitting || remoteKillsOwed()); k++) {
      await sleep(REMOTE_KILL_EVERY);
      try {
        if (remoteSteps[k % remoteSteps.length] === 'remote') {
          const busy = await remoteBusy();
          remotes[0].kill('SIGKILL');
          fault(`SIGKILL remote-agent (${busy} remote tasks in flight)`);
          report.remote.kills += 1;
          await sleep(1000);
          await startRemote();
          fault('remote-agent restarted');
        } else {
          const busy = await remoteBusy();
          bridges[0].kill('SIGKILL');
          fault(`SIGKILL bridge (${busy} remote tasks in flight)`);
          report.remote.bridgeKills += 1;
          await startBridge();
          fault('bridge restarted');
        }
      } catch (err) {
        remoteFaultsFailed += 1;
        fault(`fault failed: ${err}`);
        report.notes.push(`a remote fault failed: ${err}`);
      }
      lastFault = Date.now();
    }
  })();
  const faultLoop = Promise.all([killLoop, oneOffLoop, leaderLoop, remoteLoop]).then(() => {
    report.leaderKills = leaderKills;
    report.scheduleComplete =
      (kills > 0 || !FAULTS.has('worker')) &&
      !remoteKillsOwed() &&
      remoteFaultsFailed === 0 &&
      oneOffsFailed === 0 &&
      (!CLUSTER || !FAULTS.has('leader') || (leaderKills >= 2 && leaderKillsFailed === 0));
  });

  // --- Submit -------------------------------------------------------------------------------------
  const accepted = new Map(); // index → task id
  const subs = []; // push subscriptions, checked at the end
  let configsNotCreated = 0;
  let next = 0;
  /**
   * A streaming task: SendStreamingMessage, and after a drop (a dispatcher killed, a broker
   * failover, the 30 s request timeout) SubscribeToTask with Last-Event-ID on the other replica,
   * then the next, until the stream settles. Every event's id is checked: each is the previous + 1
   * (a gap or a repeat is counted), whichever replica sent it.
   */
  const streamTask = async (t, port) => {
    const observer = `stream-${++streams}`;
    const { resumption, client } = await resumableClient(t.tenant[1], port, t.agent);
    let taskId;
    let lastId;
    let settled = false;
    const seen = (p, id) => {
      if (p?.$case === 'task') taskId ??= p.value.id;
      else if (p?.$case === 'statusUpdate' || p?.$case === 'artifactUpdate') taskId ??= p.value.taskId;
      if (taskId && (p?.$case === 'task' || p?.$case === 'statusUpdate')) saw(taskId, p.value.status?.state, observer);
      const state = p?.$case === 'task' || p?.$case === 'statusUpdate' ? stateName(p.value.status?.state) : undefined;
      if (state && (TERMINAL.has(state) || state === 'TASK_STATE_INPUT_REQUIRED')) settled = true;
      const n = id === undefined ? NaN : Number(id);
      report.streams.events += 1;
      if (!Number.isInteger(n)) report.streams.withoutId += 1;
      else if (lastId !== undefined && p?.$case !== 'task') {
        if (n <= lastId) report.streams.repeated += 1;
        else if (n > lastId + 1) {
          report.streams.gaps += 1;
          if (report.streams.gapExamples.length < 5) report.streams.gapExamples.push({ taskId, after: lastId, got: n });
        }
      }
      if (Number.isInteger(n)) lastId = Math.max(lastId ?? n, n);
    };
    try {
      for await (const { payload: p } of client.sendMessageStream(message(t))) seen(p, resumption.takeId());
    } catch (err) {
      if (!taskId) throw err; // nothing accepted yet as far as we know: onAnyDispatcher sends again (same messageId)
    }
    if (!taskId) throw new Error('stream ended without a task');
    for (let hop = 1; !settled; hop++) {
      if (hop > 40) throw new Error(`stream of ${taskId} did not settle after ${hop - 1} resumptions`);
      report.streams.resumed += 1;
      const other = dispatcherPorts[(dispatcherPorts.indexOf(port) + hop) % dispatcherPorts.length];
      try {
        const r = await resumableClient(t.tenant[1], other, t.agent);
        r.resumption.resumeAfter = lastId === undefined ? undefined : String(lastId);
        for await (const { payload: p } of r.client.resubscribeTask({ tenant: '', id: taskId })) seen(p, r.resumption.takeId());
        settled = true; // the server ended the stream: the task settled
      } catch (err) {
        if (hop % 5 === 0) log(`task ${t.i}: resuming the stream of ${taskId} failed: ${String(err).slice(0, 200)}`);
        await sleep(250 * Math.min(hop, 8));
      }
    }
    return taskId;
  };
  const submitOne = async (t) => {
    const id = await onAnyDispatcher(t, async (client, port) => {
      if (t.mode === 'streaming') return streamTask(t, port);
      const r = await client.sendMessage(message(t));
      const task = r?.task ?? r;
      if (!task?.id) throw new Error(`no task in ${JSON.stringify(r).slice(0, 200)}`);
      saw(task.id, task.status?.state);
      return task.id;
    }).catch((err) => log(`task ${t.i}: never accepted: ${err}`));
    if (!id) return;
    accepted.set(t.i, id);
    if (t.cancel) {
      // The caller gives up while the tree works (its children starting, calling tools, settling):
      // the cancel must reach every child the tree has by then, and never fail on the race.
      await sleep(200 + Math.random() * 2800);
      const cancel = (c) =>
        c.cancelTask({ tenant: '', id, metadata: undefined }).catch((err) => {
          if (/-32603|internal error/i.test(String(err?.message ?? err))) report.delegation.cancelInternalErrors += 1;
          throw err;
        });
      const canceled = await onAnyDispatcher(t, cancel, 5).catch(() => undefined);
      if (canceled) report.delegation.canceledByCaller += 1;
    }
    if (!t.push) return;
    const sub = { configId: t.push.configId, receiver: t.push.receiver, taskId: id, token: t.push.token, i: t.i };
    sub.auth = t.push.auth ? `${t.push.auth.scheme} ${t.push.auth.credentials}` : undefined;
    sub.expectAll = t.push.how === 'send';
    if (t.push.how === 'create') {
      // Events projected before the config existed are not pushed; the final one is, if it came later.
      const made = await onAnyDispatcher(t, (c) => c.createTaskPushNotificationConfig({ ...pushConfig(t), taskId: id })).catch((err) =>
        log(`task ${t.i}: push config not created: ${err}`),
      );
      if (!made) {
        configsNotCreated += 1;
        return;
      }
      const now = await onAnyDispatcher(t, (c) => c.getTask({ tenant: '', id, historyLength: 0 })).catch(() => undefined);
      sub.expectFinal = now !== undefined && !TERMINAL.has(stateName(now.status?.state));
    }
    subs.push(sub);
  };
  const submitStart = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        const t = tasks[next++];
        // CHAOS_MIN_SUBMIT_MS spreads a short run over the fault schedule (task i not before i/N of it).
        await sleep(Math.max(0, submitStart + (MIN_SUBMIT_MS * t.i) / N - Date.now()));
        await submitOne(t);
        if (t.i % 500 === 0) log(`submitted ${t.i}/${N}`);
      }
    }),
  );
  submitting = false;
  const submittedAt = Date.now();
  log(`all submitted: ${accepted.size}/${N} accepted; the fault schedule runs to its end`);
  await faultLoop;
  report.accepted = accepted.size;
  log('fault schedule done; waiting for every task to finish');

  // --- Settle: every accepted task terminal (the dispatcher's table says which to ask; GetTask confirms)
  const pending = new Map([...accepted].map(([i, id]) => [id, tasks[i]]));
  const finalState = new Map();
  const artifactsOf = new Map(); // remote-bound task id → its artifacts as GetTask answered them
  const until = Date.now() + SETTLE_TIMEOUT;
  let lastSettleLog = Date.now();
  // Reads alternate between the dispatchers: one that died unexpectedly (reported as such) must
  // not make every task look unfinished.
  let round = 0;
  while (pending.size > 0 && Date.now() < until) {
    const readPort = dispatcherPorts[round++ % dispatcherPorts.length];
    const ids = [...pending.keys()];
    const done = (
      await sql(`SELECT id FROM dispatcher.tasks WHERE id = ANY($1) AND state = ANY($2)`, [ids, [...TERMINAL]]).catch(() => [])
    ).map((r) => r.id);
    let k = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (k < done.length) {
          const id = done[k++];
          try {
            const t = pending.get(id);
            const task = await (await clientFor(t.tenant[1], readPort, t.agent)).getTask({ tenant: '', id, historyLength: 0 });
            const s = stateName(task.status?.state);
            saw(id, s);
            if (t.remote) artifactsOf.set(id, task.artifacts ?? []);
            if (TERMINAL.has(s)) {
              finalState.set(id, s);
              pending.delete(id);
            }
          } catch {
            /* dispatcher busy; next round */
          }
        }
      }),
    );
    if (pending.size > 0) {
      if (Date.now() - lastSettleLog > 10000) {
        lastSettleLog = Date.now();
        log(`settling: ${pending.size} not terminal yet (e.g. ${[...pending.keys()].slice(0, 3).join(', ')})`);
      }
      await sleep(1000);
    }
  }
  // Recovery: from the end of the last fault until every task was terminal; drain: from the last
  // submission until then (a short run may still be submitting when its last fault ends).
  report.recoveryMs = report.faults.length > 0 ? Date.now() - lastFault : null;
  report.drainMs = Date.now() - submittedAt;
  report.lost = N - accepted.size + pending.size;
  for (const s of finalState.values()) report.finalStates[s] = (report.finalStates[s] ?? 0) + 1;
  log(`settled: ${finalState.size} terminal, ${pending.size} not`);

  // --- Refunds per task ----------------------------------------------------------------------------
  const rows = await sql(`SELECT tenant, invoice_id, count(*)::int AS n FROM billing.refunds WHERE invoice_id LIKE 'INV-9%' GROUP BY 1, 2`);
  const refunds = new Map(rows.map((r) => [`${r.tenant}/${r.invoice_id}`, r.n]));
  // Exactly one refund per COMPLETED task, none for a task that ended otherwise (FAILED, CANCELED,
  // REJECTED must not have moved money: the caller would be right to try again).
  for (const [i, id] of accepted) {
    if (tasks[i].remote) continue; // the remote echoes; it moves no money
    const n = refunds.get(`${tasks[i].tenant[0]}/${tasks[i].invoice}`) ?? 0;
    const state = finalState.get(id);
    if (n > 1) report.duplicates += 1;
    if (n === 0 && state === 'TASK_STATE_COMPLETED') report.missingRefunds += 1;
    // A triage task's refund is its child's: a parent that failed or was canceled after its refund
    // child completed keeps that refund (the trees are checked below).
    if (n > 0 && state !== undefined && state !== 'TASK_STATE_COMPLETED' && !tasks[i].question) report.refundsOfUnsuccessful += 1;
  }

  // --- Task trees: each child created once, none open under a settled parent, none settling after
  // its parent was canceled or failed, one refund exactly for each refund child that completed.
  const trees = [...accepted].filter(([i]) => tasks[i].question).map(([i, id]) => ({ t: tasks[i], id }));
  report.delegation.trees = trees.length;
  const children = await sql(
    `SELECT c.id, c.parent_task_id, c.agent_id, c.state, c.status_timestamp AS at, p.state AS parent_state, p.status_timestamp AS parent_at,
            c.task->'history'->0->'metadata'->>'mesh/step' AS step
     FROM dispatcher.tasks c JOIN dispatcher.tasks p ON p.id = c.parent_task_id WHERE c.parent_task_id = ANY($1)`,
    [trees.map((x) => x.id)],
  );
  report.delegation.children = children.length;
  const perStep = new Map();
  for (const c of children) {
    const k = `${c.parent_task_id}/${c.agent_id}/${c.step}`;
    perStep.set(k, (perStep.get(k) ?? 0) + 1);
    const example = (what) => report.delegation.examples.length < 5 && report.delegation.examples.push({ what, child: c });
    if (!TERMINAL.has(c.state) && TERMINAL.has(c.parent_state)) {
      report.delegation.openChildrenOfSettledParents += 1;
      example('open child of a settled parent');
    }
    // Canceled with its parent in one transaction, at the same time; a later worker report changes no state.
    if ((c.parent_state === 'TASK_STATE_CANCELED' || c.parent_state === 'TASK_STATE_FAILED') && new Date(c.at) > new Date(c.parent_at)) {
      report.delegation.childrenOutlivingParent += 1;
      example('child settled after its parent ended');
    }
  }
  for (const n of perStep.values()) if (n > 1) report.delegation.duplicateChildren += n - 1;
  for (const { t, id } of trees) {
    const refundChild = children.find((c) => c.parent_task_id === id && c.agent_id === 'refund-agent');
    const n = refunds.get(`${t.tenant[0]}/${t.invoice}`) ?? 0;
    if (refundChild?.state === 'TASK_STATE_COMPLETED' && n !== 1) report.delegation.refundChildrenWithoutRefund += 1;
  }
  report.refundsApplied = rows.reduce((a, r) => a + r.n, 0);

  // --- Every task that did not complete, explained from the run's own tables ----------------------
  for (const [i, id] of accepted) {
    if (finalState.get(id) === 'TASK_STATE_COMPLETED') continue;
    const t = tasks[i];
    const q = (text, params) => sql(text, params).catch((e) => [{ error: String(e) }]);
    const detail = {
      task: id,
      tenant: t.tenant[0],
      agent: t.agent,
      invoice: t.invoice,
      mode: t.mode,
      finalState: finalState.get(id) ?? 'not terminal',
      refunds: refunds.get(`${t.tenant[0]}/${t.invoice}`) ?? 0,
      dispatcher: await q(
        `SELECT state, turn, deadline_at, task->'status' AS status, (SELECT json_agg(e) FROM dispatcher.executions e WHERE e.task_id = t.id) AS executions FROM dispatcher.tasks t WHERE id = $1`,
        [id],
      ),
      worker: await q(
        `SELECT execution_id, state, owner, attempt, final_state, reply_message, created_at, finished_at FROM agents.executions WHERE task_id = $1`,
        [id],
      ),
      effects: await q(`SELECT tool, state, reason, attempts, owner, created_at, resolved_at FROM agents.tool_effects WHERE task_id = $1`, [
        id,
      ]),
    };
    report.notCompleted.push(detail);
    log(`not completed: ${JSON.stringify(detail)}`);
  }

  // --- No regression in what clients saw ------------------------------------------------------------
  const highestByTask = new Map();
  for (const [key, states] of seenStates) {
    let max = 0;
    for (const s of states) {
      if (rank(s) < max) {
        report.regressions += 1;
        if (report.regressionExamples.length < 5) report.regressionExamples.push({ observer: key, states });
      }
      max = Math.max(max, rank(s));
    }
    const taskId = key.slice(0, key.indexOf('|'));
    const seen = highestByTask.get(taskId);
    // Observers in the order they began (Map insertion order): a later one starting lower.
    if (seen !== undefined && rank(states[0]) < seen.max) {
      report.laterSubscriptionStartedLower += 1;
      if (report.laterSubscriptionExamples.length < 5) report.laterSubscriptionExamples.push({ earlier: seen.states, later: key, states });
    }
    if (seen === undefined || max > seen.max) highestByTask.set(taskId, { max, states });
  }
  if (report.regressions > 0) log(`regressions: ${JSON.stringify(report.regressionExamples)}`);
  if (report.laterSubscriptionStartedLower > 0)
    report.notes.push(
      `${report.laterSubscriptionStartedLower} later subscription(s) started below a state an earlier one had seen (examples: ${JSON.stringify(report.laterSubscriptionExamples)})`,
    );

  // --- Remote-bound tasks, against the remote's own journal and task store -------------------------
  if (REMOTE_EVERY > 0) {
    const r = report.remote;
    const journal = readJournal(join(remoteDir, 'remote-agent.jsonl'));
    const remoteState = new Map(); // remote task id → its last saved state
    for (const snap of readJournal(join(remoteDir, 'remote-tasks.jsonl'))) remoteState.set(snap.id, snap.status?.state ?? 'unknown');
    const example = (what, detail) => r.examples.length < 5 && r.examples.push({ what, ...detail });
    const remoteBound = tasks.filter((t) => t.remote);
    const meshIdOf = new Map(); // mesh task id → task
    for (const t of remoteBound) if (accepted.has(t.i)) meshIdOf.set(accepted.get(t.i), t);
    r.tasks = remoteBound.length;
    r.accepted = meshIdOf.size;
    r.lost = remoteBound.length - meshIdOf.size + [...meshIdOf.keys()].filter((id) => pending.has(id)).length;
    for (const id of meshIdOf.keys()) {
      const s = finalState.get(id) ?? 'not terminal';
      r.finalStates[s] = (r.finalStates[s] ?? 0) + 1;
    }
    // The bridge's messageId is `mesh-{tenant}:{mesh task id}:{turn}`: each remote task is placed on
    // the mesh task it was created for.
    const createdFor = new Map(); // mesh task id → remote task ids
    for (const e of journal) {
      if (e.e === 'send') r.sends += 1;
      else if (e.e === 'dedup') r.answeredByDedup += 1;
      else if (e.e === 'recovered') r.recoveredAtStart += 1;
      else if (e.e === 'created') {
        r.remoteTasksCreated += 1;
        const s = remoteState.get(e.taskId) ?? 'never saved';
        r.remoteTaskStates[s] = (r.remoteTaskStates[s] ?? 0) + 1;
        const m = /^mesh-[^:]+:(.+):\d+$/.exec(e.messageId);
        if (!m || !meshIdOf.has(m[1])) {
          r.unplaced += 1;
          example('a remote task for no remote-bound mesh task', { messageId: e.messageId, remoteTask: e.taskId });
          continue;
        }
        createdFor.set(m[1], [...(createdFor.get(m[1]) ?? []), e.taskId]);
      }
    }
    for (const [id, t] of meshIdOf) {
      const created = createdFor.get(id) ?? [];
      r.remoteTasksPerMeshTask[created.length] = (r.remoteTasksPerMeshTask[created.length] ?? 0) + 1;
      if (created.length > 1) {
        r.duplicates += created.length - 1;
        example('more than one remote task', { task: id, remoteTasks: created });
      }
      if (finalState.get(id) !== 'TASK_STATE_COMPLETED') continue;
      if (created.length === 0) {
        r.completedWithoutRemoteTask += 1;
        example('completed without a remote task', { task: id });
      }
      // The artifact must be the remote's echo of exactly this task's input.
      if (!JSON.stringify(artifactsOf.get(id) ?? []).includes(JSON.stringify(`echo: ${messageText(t)}`))) {
        r.echoMismatches += 1;
        example('artifact does not echo the input', { task: id, artifacts: artifactsOf.get(id) });
      }
    }
    for (const [key, states] of seenStates) {
      if (!meshIdOf.has(key.slice(0, key.indexOf('|')))) continue;
      let max = 0;
      for (const s of states) {
        if (rank(s) < max) r.regressions += 1;
        max = Math.max(max, rank(s));
      }
    }
    log(`remote: ${JSON.stringify({ ...r, examples: undefined })}`);
    if (r.examples.length > 0) log(`remote examples: ${JSON.stringify(r.examples)}`);
  }

  // --- Push: wait for the dispatcher's deliveries, then compare with the events topic --------------
  const pushUntil = Date.now() + PUSH_SETTLE_TIMEOUT;
  while (Date.now() < pushUntil) {
    const [{ n }] = await sql(`SELECT count(*)::int AS n FROM dispatcher.push_deliveries WHERE status = 'pending'`);
    if (n === 0) break;
    await sleep(1000);
  }
  for (const s of subs) s.finalState = finalState.get(s.taskId);
  const expected = await pushableEvents(kafka, topics.events(), new Set(subs.filter((s) => s.expectAll).map((s) => s.taskId)));
  const recorded = new Map();
  for (const r of await sql(`SELECT config_id, event_id, status FROM dispatcher.push_deliveries`)) {
    const e = recorded.get(r.config_id) ?? { eventIds: new Set(), notDelivered: 0 };
    e.eventIds.add(r.event_id);
    if (r.status !== 'delivered') e.notDelivered += 1;
    recorded.set(r.config_id, e);
  }
  report.push = { ...receivers.check(subs, expected, recorded), configsNotCreated };

  // --- Lag back to 0; dead letters --------------------------------------------------------------------
  const lag = await workLag(kafka, prefix);
  report.lag = lag.total;
  report.lagOfDeadInstances = lag.dead;
  report.deadLetters = await deadLetters(kafka, prefix);
}

async function cleanup() {
  cleaningUp = true;
  await receivers?.stop().catch(() => undefined);
  await Promise.all(
    [...children].map(
      (c) =>
        new Promise((r) => {
          if (c.exitCode !== null) return r();
          const t = setTimeout(() => (c.kill('SIGKILL'), r()), 10000);
          c.once('exit', () => (clearTimeout(t), r()));
          c.kill('SIGTERM');
        }),
    ),
  );
  await broker.close();
  if (!process.env.CHAOS_LOG_DIR) rmSync(remoteDir, { recursive: true, force: true });
  if (pgRestarted) await ensurePostgres(pgPlan).catch((err) => log(`POSTGRES IS NOT RUNNING: ${err}`));
  await dbPool?.end().catch(() => undefined);
  if (process.env.CHAOS_KEEP_DB === '1') log(`CHAOS_KEEP_DB=1: database ${dbName} kept`);
  else
    await withRetry(
      'drop database',
      () => adminPool.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`),
      20000,
    ).catch((err) => log(String(err)));
  await adminPool.end().catch(() => undefined);
}

let cleaning;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    log(`${sig}: cleaning up`);
    cleaning ??= cleanup().finally(() => process.exit(130));
  });
}
try {
  await main();
} catch (err) {
  failed = true;
  report.error = String(err?.stack ?? err);
  log(report.error);
} finally {
  cleaning ??= cleanup();
  await cleaning;
}
const p = report.push;
const checks = {
  'lost = 0': report.lost === 0,
  'duplicate refunds = 0': report.duplicates === 0,
  'completed tasks without a refund = 0': report.missingRefunds === 0,
  'refunds of tasks that ended FAILED/CANCELED/REJECTED = 0': report.refundsOfUnsuccessful === 0,
  'state regressions seen by clients = 0 (per stream, per poller)': report.regressions === 0,
  'consumer lag of the work groups back to 0': report.lag === 0,
  'streams: every event carries its id; no gap and no repeat across Last-Event-ID resumptions':
    report.streams.withoutId === 0 && report.streams.gaps === 0 && report.streams.repeated === 0,
  'push: every expected event received at least once, final states agree, nothing left undelivered':
    p !== null && p.missing === 0 && p.finalStateMismatches === 0 && p.undelivered === 0 && p.configsNotCreated === 0,
  'push: deduping by event id leaves exactly one of each (same body, recorded by the dispatcher)':
    p !== null && p.differingDuplicates === 0 && p.notRecorded === 0,
  'push: no state regression as received': p !== null && p.regressions === 0,
  'push: token and credentials on every delivery': p !== null && p.wrongCredentials === 0,
  'delegation: every child created once, none open under a settled parent, none settling after its parent ended, a refund for each completed refund child':
    report.delegation.duplicateChildren === 0 &&
    report.delegation.openChildrenOfSettledParents === 0 &&
    report.delegation.childrenOutlivingParent === 0 &&
    report.delegation.refundChildrenWithoutRefund === 0,
  'delegation: no CancelTask of a tree answered an internal error': report.delegation.cancelInternalErrors === 0,
  ...(REMOTE_EVERY > 0
    ? {
        'remote: every remote-bound task accepted and terminal': report.remote.tasks > 0 && report.remote.lost === 0,
        'remote: at most one remote task per mesh task (by messageId), none unplaced':
          report.remote.duplicates === 0 && report.remote.unplaced === 0,
        "remote: a COMPLETED remote-bound task's artifact echoes its input, and the remote created its task":
          report.remote.echoMismatches === 0 && report.remote.completedWithoutRemoteTask === 0,
        'remote: no state regression seen by the callers of remote-bound tasks': report.remote.regressions === 0,
      }
    : {}),
  'the whole fault schedule ran': report.scheduleComplete,
  'no process exited unless killed by the schedule': report.unexpectedExits.length === 0,
};
for (const ok of Object.values(checks)) if (!ok) failed = true;
report.checks = checks;
report.elapsedMs = Date.now() - t0;
report.passed = !failed;
if (process.env.CHAOS_REPORT_FILE) writeFileSync(process.env.CHAOS_REPORT_FILE, `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(report)}\n`);
console.error(
  [
    `chaos ${report.startedAt}: ${N} tasks, ${report.accepted} accepted, final ${JSON.stringify(report.finalStates)}, ` +
      `${report.refundsApplied} refunds, all terminal ${report.recoveryMs} ms after the last fault and ${report.drainMs} ms after the last submission, ${(report.elapsedMs / 1000).toFixed(0)} s`,
    `faults: ${report.faults.map((f) => `${f.what} @${(f.at / 1000).toFixed(1)}s`).join('; ')}`,
    p &&
      `push: ${p.configs} configs, ${p.expectedEvents} expected events, ${p.deliveries} deliveries (${p.distinctEvents} distinct, ` +
        `${p.duplicateDeliveries} duplicates), ${p.refusedWith503} refused with 503, missing ${p.missing}, regressions ${p.regressions}`,
    `streams: ${report.streams.events} events, ${report.streams.resumed} resumptions with Last-Event-ID, ` +
      `${report.streams.withoutId} without id, ${report.streams.gaps} gaps, ${report.streams.repeated} repeats`,
    `delegation: ${JSON.stringify({ ...report.delegation, examples: undefined })}`,
    REMOTE_EVERY > 0 && `remote: ${JSON.stringify({ ...report.remote, examples: undefined })}`,
    `throttled: ${JSON.stringify(report.throttled)}; dead letters: ${JSON.stringify(report.deadLetters)}`,
    ...report.unexpectedExits.map(
      (e) => `UNEXPECTED EXIT: ${e.name} (${e.code ?? e.signal}) @${(e.at / 1000).toFixed(1)}s: ${e.log.slice(-300)}`,
    ),
    ...report.notes.map((n) => `note: ${n}`),
    ...Object.entries(checks).map(([k, ok]) => `${ok ? 'PASS' : 'FAIL'}  ${k}`),
  ]
    .filter(Boolean)
    .join('\n'),
);
// Exit once stdout has taken the report: it can be long (every task that did not complete, with its
// rows), and a pipe still holding its tail at process.exit loses it.
process.stdout.write('', () => process.exit(failed ? 1 : 0));
