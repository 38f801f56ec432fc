#!/usr/bin/env node
// npm run bench:auth — what Kafka authentication and task grants cost on the accept and turn paths,
// against the platform before them, in one run:
//   (baseline) BENCH_BASELINE_REF (default ea02c14, the last commit without them) checked out and
//              built under .bench/, its dispatcher and echo worker on a broker without
//              authentication (KAFKA_AUTH=none) started here;
//   (ours)     this checkout's dispatcher and echo worker on the local authenticated broker (SASL/
//              SCRAM principals, the StandardAuthorizer), every run command carrying a signed grant.
// Scenarios, BENCH_ROUNDS rounds (3), the two stacks alternating which goes first:
//   (a) SendMessage with returnImmediately (accept: grant signed, command produced over SASL);
//   (b) blocking SendMessage through Kafka and the echo worker and back (the turn's bus path).
// Then the tool token on the turn path, ours only: (c) RFC 8693 exchanges of a live grant at the
// dispatcher's token endpoint, CPU per exchange; (d) a tool server's verification of an exchanged
// token (JWKS, EdDSA) against an HS256 token, in-process, µs per verification.
// CPU per request by process (dispatcher, echo worker, Postgres, the stack's own broker); ratios are
// medians of the rounds' ours ÷ baseline. Writes bench/results/auth.json.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { URLSearchParams } from 'node:url';
import { parseEnv } from 'node:util';
import autocannon from 'autocannon';
import { A2A_HEADERS, describeLoad, drained, sendMessageBody } from './dispatch-requests.mjs';
import { freePort, startDispatchStack } from './dispatch-stack.mjs';
import { cpuMs, cpuMsOf, infraCpuMs } from './process-cpu.mjs';
import { machine, measuredCommit } from './run-facts.mjs';
import { integer, text } from './settings.mjs';
import { median, round3, spread } from './stats.mjs';

const root = new URL('..', import.meta.url).pathname;
const connections = integer('BENCH_CONNECTIONS', 32);
const duration = integer('BENCH_DURATION_S', 10);
const warmupS = integer('BENCH_WARMUP_S', 3);
const rounds = integer('BENCH_ROUNDS', 3);
const baselineRef = text('BENCH_BASELINE_REF', 'ea02c14');
const kafkaSh = join(root, 'scripts/kafka.sh');

/** Runs `fn` with `vars` in process.env (undefined deletes), as the stacks read their settings from it. */
async function withEnv(vars, fn) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const put = (vs) => {
    for (const [k, v] of Object.entries(vs))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  };
  put(vars);
  try {
    return await fn();
  } finally {
    put(saved);
  }
}

/** The baseline's checkout, built once and kept under .bench/ (a detached worktree of the repo). */
function baselineCheckout() {
  const dir = join(root, '.bench', `baseline-${baselineRef}`);
  if (!existsSync(join(dir, '.built'))) {
    rmSync(dir, { recursive: true, force: true });
    spawnSync('git', ['worktree', 'prune'], { cwd: root });
    mkdirSync(join(root, '.bench'), { recursive: true });
    execFileSync('git', ['worktree', 'add', '--detach', dir, baselineRef], { cwd: root, stdio: 'inherit' });
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'inherit' });
    writeFileSync(join(dir, '.built'), `${baselineRef}\n`);
  }
  return dir;
}

/** A broker without authentication for the baseline, on ports of its own; `stop()` ends it. */
async function plaintextBroker() {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), 'mesh-bench-kafka-'));
  symlinkSync(join(root, '.kafka', 'libs'), join(home, 'libs'));
  const env = {
    ...process.env,
    KAFKA_AUTH: 'none',
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_HOME_DIR: home,
  };
  execFileSync(kafkaSh, ['start'], { env, stdio: 'inherit' });
  return {
    port,
    brokers: `127.0.0.1:${port}`,
    stop() {
      spawnSync(kafkaSh, ['stop'], { env, stdio: 'inherit' });
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The local authenticated broker's admin settings (scripts/kafka.sh credentials). */
function authenticatedBroker() {
  execFileSync(kafkaSh, ['fetch'], { stdio: 'inherit' });
  if (spawnSync(kafkaSh, ['status'], { stdio: 'ignore' }).status !== 0) execFileSync(kafkaSh, ['start'], { stdio: 'inherit' });
  const vars = parseEnv(execFileSync(kafkaSh, ['credentials'], { encoding: 'utf8' }));
  if (!vars.KAFKA_USERNAME) throw new Error('bench:auth needs the local broker with authentication (KAFKA_AUTH unset)');
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
  return { brokers, port: brokers.split(',')[0].split(':').pop(), vars };
}

/** One load of `seconds` on `stack` (after a warm-up): req/s and CPU ms per request by process. */
async function load(name, stack, kafkaPort, returnImmediately) {
  const url = stack.urls.dispatcher;
  const run = (seconds) =>
    autocannon({
      url,
      method: 'POST',
      headers: A2A_HEADERS,
      connections,
      duration: seconds,
      requests: [{ setupRequest: (req) => ({ ...req, body: sendMessageBody(returnImmediately) }) }],
    });
  await run(warmupS);
  await drained(stack);
  const reading = () => {
    const infra = infraCpuMs({ kafkaPort });
    return { dispatcher: cpuMsOf(stack.serverPids()), worker: cpuMs(stack.worker.pid) ?? 0, postgres: infra.postgres, kafka: infra.kafka };
  };
  const before = reading();
  const result = await run(duration);
  const after = reading();
  const n = result['2xx'];
  if (n === 0 || result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} answers were not 2xx (${n} were)`);
  // The backlog a returnImmediately load leaves is work of this load too: charged before the next.
  await drained(stack);
  const drainedReading = reading();
  const cpu = Object.fromEntries(Object.keys(before).map((k) => [k, round3((drainedReading[k] - before[k]) / n)]));
  const total = round3(Object.values(cpu).reduce((a, b) => a + b, 0));
  return {
    reqPerS: Math.round(n / duration),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuMsPerRequest: { total, ...cpu },
    afterLoad: after,
  };
}

const commit = measuredCommit();
const plain = await plaintextBroker();
const authed = authenticatedBroker();
const baseDir = baselineCheckout();
const stacks = {};
try {
  const base = await import(join(baseDir, 'bench', 'dispatch-stack.mjs'));
  const noCredentials = { KAFKA_USERNAME: undefined, KAFKA_PASSWORD: undefined, KAFKA_SASL_MECHANISM: undefined };
  stacks.baseline = await withEnv({ ...noCredentials, KAFKA_BROKERS: plain.brokers }, () =>
    base.startDispatchStack('bench-auth-base', { companions: false }),
  );
  stacks.ours = await withEnv({ ...authed.vars, KAFKA_BROKERS: authed.brokers }, () =>
    startDispatchStack('bench-auth', { companions: false }),
  );
  const kafkaPortOf = { baseline: plain.port, ours: authed.port };
  const perRound = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ['baseline', 'ours'] : ['ours', 'baseline'];
    const round = { accept: {}, blocking: {} };
    for (const [scenario, returnImmediately] of [
      ['accept', true],
      ['blocking', false],
    ]) {
      for (const who of order) {
        round[scenario][who] = await load(`${scenario} ${who}`, stacks[who], kafkaPortOf[who], returnImmediately);
        console.error(
          `bench:auth round ${r + 1} ${scenario} ${who}: ${JSON.stringify(round[scenario][who].cpuMsPerRequest)} ${round[scenario][who].reqPerS} req/s`,
        );
      }
    }
    perRound.push(round);
  }
  const ratio = (scenario, pick) => perRound.map((rd) => pick(rd[scenario].ours) / pick(rd[scenario].baseline));
  const summary = {};
  for (const scenario of ['accept', 'blocking']) {
    const cpu = ratio(scenario, (x) => x.cpuMsPerRequest.total);
    const rps = ratio(scenario, (x) => x.reqPerS);
    summary[scenario] = {
      cpuRatio: round3(median(cpu)),
      cpuRatioSpread: spread(cpu),
      reqPerSRatio: round3(median(rps)),
      reqPerSRatioSpread: spread(rps),
      baselineCpuMs: round3(median(perRound.map((rd) => rd[scenario].baseline.cpuMsPerRequest.total))),
      oursCpuMs: round3(median(perRound.map((rd) => rd[scenario].ours.cpuMsPerRequest.total))),
      oursDispatcherCpuMs: round3(median(perRound.map((rd) => rd[scenario].ours.cpuMsPerRequest.dispatcher))),
      baselineDispatcherCpuMs: round3(median(perRound.map((rd) => rd[scenario].baseline.cpuMsPerRequest.dispatcher))),
    };
  }
  summary.tokens = await withEnv(authed.vars, () => tokenCosts(stacks.ours));
  const out = {
    bench: 'auth',
    date: new Date().toISOString(),
    machine: machine(),
    commit,
    baseline: { ref: baselineRef, broker: 'KAFKA_AUTH=none' },
    ours: { broker: 'SASL/SCRAM-SHA-512, StandardAuthorizer', grants: true },
    load: describeLoad({ connections, durationSeconds: duration, warmupSeconds: warmupS, rounds }),
    summary,
    perRound,
  };
  writeFileSync(join(root, 'bench/results/auth.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log(JSON.stringify(summary, null, 2));
} finally {
  for (const s of Object.values(stacks)) await s.stop().catch(() => undefined);
  plain.stop();
}

/**
 * (c) and (d): a live grant (a run command taken off the echo worker's topic while the worker is
 * stopped, so its task stays open) exchanged at the token endpoint under load, and the exchanged
 * token verified as a tool server does, against an HS256 token verified with a shared secret.
 */
async function tokenCosts(stack) {
  const { createKafka } = await import('@mesh/bus');
  const { TopicNames, ToolGrants } = await import('@mesh/contract');
  const { createToolTokenVerifier, HmacToolTokenMinter, hmacToolTokenVerifier } = await import('@mesh/tool-gateway');
  process.kill(stack.worker.pid, 'SIGSTOP');
  let grant;
  try {
    const sent = await fetch(stack.urls.dispatcher, { method: 'POST', headers: A2A_HEADERS, body: sendMessageBody(true) }).then((r) =>
      r.json(),
    );
    const taskId = sent.result?.task?.id;
    if (!taskId) throw new Error(`no task: ${JSON.stringify(sent)}`);
    const consumer = createKafka({ brokers: stack.kafkaBrokers, clientId: 'bench-auth-grant' }).consumer({
      groupId: `bench-auth-${taskId}`,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: new TopicNames(stack.topicPrefix).commands('echo-agent'), fromBeginning: true });
    grant = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no run command with a grant within 30 s')), 30_000);
      consumer.run({
        eachMessage: async ({ message }) => {
          if (String(message.headers?.task_id) === taskId && message.headers?.grant) {
            clearTimeout(timer);
            resolve(String(message.headers.grant));
          }
        },
      });
    });
    await consumer.disconnect();
  } catch (err) {
    process.kill(stack.worker.pid, 'SIGCONT');
    throw err;
  }
  // The worker stays stopped while the grant is exchanged: its task must stay open.
  try {
    return await exchangeCosts(stack, grant, ToolGrants, { createToolTokenVerifier, HmacToolTokenMinter, hmacToolTokenVerifier });
  } finally {
    process.kill(stack.worker.pid, 'SIGCONT');
  }
}

async function exchangeCosts(stack, grant, ToolGrants, { createToolTokenVerifier, HmacToolTokenMinter, hmacToolTokenVerifier }) {
  const origin = new URL(stack.urls.dispatcher).origin;
  const audience = 'bench-tools';
  const form = new URLSearchParams({
    grant_type: ToolGrants.grantType,
    subject_token: grant,
    subject_token_type: ToolGrants.jwtTokenType,
    resource: audience,
  }).toString();
  const exchange = await fetch(`${origin}${ToolGrants.tokenPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  }).then((r) => r.json());
  if (!exchange.access_token) throw new Error(`the exchange failed: ${JSON.stringify(exchange)}`);
  // (c) the endpoint under load: CPU per exchange of the dispatcher.
  const before = cpuMsOf(stack.serverPids());
  const result = await autocannon({
    url: `${origin}${ToolGrants.tokenPath}`,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
    connections: 8,
    duration,
  });
  const exchanges = result['2xx'];
  if (exchanges === 0 || result.non2xx > 0) throw new Error(`exchanges: ${result.non2xx} answers were not 2xx`);
  const dispatcherMsPerExchange = round3((cpuMsOf(stack.serverPids()) - before) / exchanges);
  // (d) verification at a tool server, in this process: the JWKS is fetched once and cached.
  const { iss } = JSON.parse(Buffer.from(exchange.access_token.split('.')[1], 'base64url').toString());
  const jwks = createToolTokenVerifier({ jwksUrl: `${origin}${ToolGrants.jwksPath}`, issuer: iss, audience });
  const secret = 'bench-secret-bench-secret';
  const hmacToken = await new HmacToolTokenMinter(secret).mint({ audience, tenant: 'acme', subject: 'bench', taskId: 'bench' });
  const hmac = hmacToolTokenVerifier(secret, audience);
  const perVerify = async (verifier, token, n = 5000) => {
    await verifier.call(token);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await verifier.call(token);
    return round3(Number(process.hrtime.bigint() - t0) / 1000 / n);
  };
  const rows = [];
  for (let r = 0; r < rounds; r++)
    rows.push({ eddsaJwksUs: await perVerify(jwks, exchange.access_token), hs256Us: await perVerify(hmac, hmacToken) });
  return {
    exchangesPerS: Math.round(exchanges / duration),
    exchangeP50Ms: result.latency.p50,
    dispatcherCpuMsPerExchange: dispatcherMsPerExchange,
    verifyUs: { eddsaJwks: median(rows.map((x) => x.eddsaJwksUs)), hs256: median(rows.map((x) => x.hs256Us)) },
    verifyRounds: rows,
  };
}
