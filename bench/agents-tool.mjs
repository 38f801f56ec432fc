// The tool scenario of bench/agents.mjs: one worker alone (a backlog of commands produced straight
// onto Kafka) whose every turn calls the 50 ms `wait` tool with `inFlight` turns in flight, against
// the raw MCP SDK pair (bench/mcp-pair.mjs) measured in the same run, at the same concurrency and
// in the same response mode (SSE streams, or JSON with `enableJsonResponse`). Rounds alternate
// pair and worker; the ratio is the median of the rounds' worker turns/s ÷ pair calls/s. CPU per
// call is read from /proc for each process: worker, tool server, Postgres, Kafka (and the pair's
// client and server). The pair is measured in its steady state (after a warm-up, all 256 loops
// busy), so the worker is too: between the 10th and the 90th percent of its turns finished, past
// the backlog's production and the ramp-up, before the tail in which fewer than 256 turns are
// left. The whole round's figures are kept beside them (`whole`).
import { cpus } from 'node:os';
import { BusProducer, createKafka } from '@mesh/bus';
import { decodeEnvelope, Envelopes, executionId, Headers, newId, TopicNames } from '@mesh/contract';
import { runPair } from './mcp-pair.mjs';
import { cpuMs, infraCpuMs } from './process-cpu.mjs';
import { median, round3, spread } from './stats.mjs';

/**
 * A first-turn `task.run` for echo-agent saying `text`, keyed as the dispatcher keys commands for
 * the bench card (`{tenant}:{agent_id}:{context_id}`: every command its own key).
 */
export function echoCommand(text) {
  const taskId = newId();
  const contextId = newId();
  const identity = {
    tenant: 'acme',
    agentId: 'echo-agent',
    taskId,
    contextId,
    messageId: newId(),
    executionId: executionId('acme', taskId, 1),
    subject: 'bench',
    actor: 'bench',
  };
  const env = Envelopes.run(identity, { turn: 1, message: { messageId: newId(), role: 'ROLE_USER', parts: [{ text }] } });
  return { taskId, key: `acme:echo-agent:${contextId}`, env };
}

/** Worker alone with the tool: `n` commands at once, time until every final event is back, CPU per turn. */
async function toolBacklog(
  { baseEnv, startWorkers, stopWorkers, warmUp, withDispatcherPaused },
  { n, inFlight, toolUrl, sessions, toolServerPid },
) {
  const workers = await startWorkers(1, {
    AGENTS_MAX_IN_FLIGHT: String(inFlight),
    BENCH_TOOLS_URL: toolUrl,
    BENCH_MCP_SESSIONS: String(sessions),
  });
  const kafka = createKafka({ brokers: baseEnv.KAFKA_BROKERS.split(','), clientId: 'bench-tool-backlog' });
  const topics = new TopicNames(baseEnv.TOPIC_PREFIX);
  // The observer shares the cores with the worker and the pair has none: it fetches in large
  // batches (up to 50 ms late, a small share of a window of seconds) and decodes final statuses only.
  const consumer = kafka.consumer({ groupId: `bench-tool-${newId()}`, minBytes: 64 * 1024, maxWaitTimeInMs: 50 });
  const producer = new BusProducer(kafka);
  try {
    await warmUp('/wait 50');
    const ids = new Set();
    let done = 0;
    let failed = 0;
    /** Time and CPU when the steady window opens (10% of the turns done) and closes (90%). */
    const marks = [];
    const markAt = new Set([Math.ceil(n * 0.1), Math.floor(n * 0.9)]);
    let snap = () => undefined;
    let resolveAll;
    const all = new Promise((r) => (resolveAll = r));
    await consumer.connect();
    await consumer.subscribe({ topic: topics.events(), fromBeginning: false });
    // A fresh group read once: committing its offsets would only add broker work to the measured window.
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          if (String(message.headers?.[Headers.kind]) !== 'task.status') continue;
          const e = decodeEnvelope({ headers: message.headers, value: message.value });
          if (e.kind !== 'task.status' || !e.body.final || !ids.delete(e.identity.taskId)) continue;
          if (e.body.state !== 'TASK_STATE_COMPLETED') failed++;
          if (markAt.has(++done)) marks.push({ done, at: Date.now(), cpu: snap() });
          if (done === n) resolveAll();
        }
      },
    });
    await new Promise((r) => setTimeout(r, 3000)); // group join
    await producer.connect();
    // Every command its own key, so 256 run at once, as the raw pair's 256 calls do.
    const commands = Array.from({ length: n }, () => echoCommand('/wait 50'));
    for (const c of commands) ids.add(c.taskId);
    const worker = workers[0].child.pid;
    snap = () => {
      const infra = infraCpuMs();
      return [cpuMs(worker), cpuMs(toolServerPid), infra.postgres, infra.kafka, cpuMs(process.pid)];
    };
    const { before, after, seconds } = await withDispatcherPaused(async () => {
      const before = snap();
      const started = Date.now();
      await Promise.all(commands.map((c) => producer.send(topics.commands('echo-agent'), c.key, c.env)));
      await all;
      return { before, seconds: (Date.now() - started) / 1000, after: snap() };
    });
    const cpuPerTurn = (a, b, turns) => {
      const per = (x, y) => (x === undefined || y === undefined ? undefined : round3((y - x) / turns));
      return {
        worker: per(a[0], b[0]),
        toolServer: per(a[1], b[1]),
        postgres: per(a[2], b[2]),
        kafka: per(a[3], b[3]),
        loadGenerator: per(a[4], b[4]),
      };
    };
    const [open, close] = marks;
    const steadyTurns = close.done - open.done;
    return {
      backlog: n,
      notCompleted: failed,
      // The steady window, compared with the pair's steady state.
      window: { fromTurn: open.done, toTurn: close.done, seconds: (close.at - open.at) / 1000 },
      turnsPerSec: Math.round(steadyTurns / ((close.at - open.at) / 1000)),
      cpuMsPerTurn: cpuPerTurn(open.cpu, close.cpu, steadyTurns),
      whole: { seconds, turnsPerSec: Math.round(n / seconds), cpuMsPerTurn: cpuPerTurn(before, after, n) },
    };
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await stopWorkers(workers);
  }
}

/**
 * Runs `rounds` rounds of (raw pair, worker alone) and returns the per-round numbers and the
 * median ratio with its spread. `harness` gives bench/agents.mjs's worker start/stop and warm-up;
 * `server` is the wait server (startWaitServer) both sides call.
 */
export async function toolScenario(harness, { server, rounds, n, inFlight, durationS, json, sessions }) {
  const out = [];
  {
    for (let i = 0; i < rounds; i++) {
      const pair = await runPair(server, { concurrency: inFlight, ms: 50, durationS });
      const worker = await toolBacklog(harness, { n, inFlight, toolUrl: server.url, sessions, toolServerPid: server.pid });
      const ratio = round3(worker.turnsPerSec / pair.callsPerSec);
      console.error(
        `tool round ${i + 1}/${rounds} (${json ? 'JSON' : 'SSE'} responses, ${sessions} session(s)): worker ${worker.turnsPerSec} turns/s ` +
          `(whole round ${worker.whole.turnsPerSec}), ` +
          `pair ${pair.callsPerSec} calls/s, ratio ${ratio}; CPU ms/turn ${JSON.stringify(worker.cpuMsPerTurn)}, pair CPU ms/call ${JSON.stringify(pair.cpuMsPerCall)}`,
      );
      out.push({ round: i + 1, ratio, worker, pair });
    }
  }
  const ratios = out.map((r) => r.ratio);
  const medianOf = (f) => round3(median(out.map(f).filter((x) => x !== undefined)));
  const cpuMsPerTurn = {
    worker: medianOf((r) => r.worker.cpuMsPerTurn.worker),
    toolServer: medianOf((r) => r.worker.cpuMsPerTurn.toolServer),
    postgres: medianOf((r) => r.worker.cpuMsPerTurn.postgres),
    kafka: medianOf((r) => r.worker.cpuMsPerTurn.kafka),
  };
  const pairCpuMsPerCall = {
    client: medianOf((r) => r.pair.cpuMsPerCall.client),
    toolServer: medianOf((r) => r.pair.cpuMsPerCall.toolServer),
  };
  return {
    responseMode: json ? 'json (enableJsonResponse)' : 'sse',
    inFlight,
    toolMs: 50,
    sessions,
    rounds: out,
    ratio: spread(ratios),
    workerTurnsPerSec: median(out.map((r) => r.worker.turnsPerSec)),
    workerTurnsPerSecWholeRound: median(out.map((r) => r.worker.whole.turnsPerSec)),
    ratioWholeRound: median(out.map((r) => round3(r.worker.whole.turnsPerSec / r.pair.callsPerSec))),
    pairCallsPerSec: median(out.map((r) => r.pair.callsPerSec)),
    cpuMsPerTurn,
    // The observer's own cost (not the worker's, and outside the bound below).
    loadGeneratorCpuMsPerTurn: medianOf((r) => r.worker.cpuMsPerTurn.loadGenerator),
    pairCpuMsPerCall,
    cpuBound: cpuBound(cpuMsPerTurn, pairCpuMsPerCall),
  };
}

/**
 * What the CPU per call allows on this machine, for each side: a single-threaded process cannot
 * exceed 1,000 / its ms per call, and all processes together not cores × 1,000 / their summed ms.
 * On a shared machine this is steadier than the wall-clock ratio (other load slows both sides
 * unevenly); Kafka and Postgres are counted machine-wide, other users' load included.
 */
function cpuBound(worker, pair) {
  const cores = cpus().length;
  const sum = (o) => Object.values(o).reduce((s, x) => s + (x ?? 0), 0);
  const workerPerSec = Math.round(Math.min(1000 / worker.worker, (cores * 1000) / sum(worker)));
  const pairPerSec = Math.round(Math.min(1000 / pair.client, 1000 / pair.toolServer, (cores * 1000) / sum(pair)));
  return {
    cores,
    workerTurnsPerSec: workerPerSec,
    pairCallsPerSec: pairPerSec,
    ratio: round3(workerPerSec / pairPerSec),
  };
}
