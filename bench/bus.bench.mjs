#!/usr/bin/env node
// npm run bench:bus — the bus against raw kafkajs on the same broker and payload (1 KiB body, every
// contract header). Not a test: it prints a table and writes bench/results/bus.json. Uses the built
// libs (run `npm run build` first; the npm script does). Flags:
//   --messages N       records for the produce/consume runs (default 100000)
//   --slow-messages N  records for the 20 ms handler run on one partition (default 40000)
//   --backlog N        backlog size for the RSS run (default 1000000; 0 skips it)
//   --rss-seconds S    how long the RSS run consumes the backlog (default 20)
//   --repeat N         runs of each throughput measure; the best counts (default 3: the machine is shared)
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { BusAdmin, BusConsumer, BusProducer, createKafka } from '@mesh/bus';
import { decodeEnvelope, encodeEnvelope, Envelopes, TopicNames } from '@mesh/contract';
import { integerOption, kafkaBrokers } from './settings.mjs';
import { machine } from './run-facts.mjs';

const args = process.argv.slice(2);
const brokers = kafkaBrokers();
const kafka = createKafka({ brokers, clientId: 'bench-bus' });
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A task.run envelope whose body is exactly 1 KiB of JSON. */
function envelope(i, tasks = 10_000) {
  const taskId = `task-${i % tasks}`;
  const identity = {
    tenant: 'acme',
    agentId: 'echo',
    taskId,
    contextId: `ctx-${taskId}`,
    messageId: `msg-${i}`,
    executionId: `acme:${taskId}:${i}`,
    subject: 'user-1',
    actor: 'client-1',
    deadlineUnixMs: 4102444800000,
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  };
  const env = Envelopes.run(identity, { turn: i, message: { role: 'user', parts: [{ kind: 'text', text: '' }] } });
  const base = encodeEnvelope(env).value.length;
  env.body.message.parts[0].text = 'x'.repeat(1024 - base);
  return env;
}
const keyOf = (i) => `acme:agent-${i % 16}`;

if (args[0] === '--rss-child') await rssChild(args[1], Number(args[2]), args[3]);
else await main();

async function main() {
  const messages = integerOption('messages', 100_000);
  const slowMessages = integerOption('slow-messages', 40_000);
  const backlog = integerOption('backlog', 1_000_000, { min: 0 });
  const rssSeconds = integerOption('rss-seconds', 20);
  const repeat = integerOption('repeat', 3);
  const prefix = `bench${Date.now().toString(36)}.`;
  const admin = new BusAdmin(kafka);
  const topics = [];
  const topic = async (name, partitions) => {
    const t = `${prefix}${name}`;
    await admin.ensureTopic(t, { partitions });
    topics.push(t, new TopicNames().deadLetters(t));
    return t;
  };
  const result = {
    date: new Date().toISOString(),
    machine: machine(),
    params: { messages, slowMessages, backlog, rssSeconds, repeat, payloadBytes: 1024, partitions: 4 },
    loadAverageAtStart: os.loadavg().map((l) => +l.toFixed(2)),
    results: {},
  };
  try {
    const runs = { rawProduce: [], rawConsume: [], rawDecodeConsume: [], busProduce: [], busConsume: [], busSlow: [] };
    // Interleaved rounds, so load from other processes on the machine hits both sides alike.
    for (let round = 1; round <= repeat; round++) {
      const rawTopic = await topic(`raw${round}`, 4);
      const busTopic = await topic(`bus${round}`, 4);
      const slowTopic = await topic(`slow${round}`, 1);
      log(`round ${round}/${repeat}: raw kafkajs produce ${messages}…`);
      runs.rawProduce.push(await rawProduce(rawTopic, messages));
      log(`round ${round}/${repeat}: bus produce ${messages}…`);
      runs.busProduce.push(await busProduce(busTopic, messages));
      log(`round ${round}/${repeat}: raw kafkajs consume (eachBatch, no work)…`);
      runs.rawConsume.push(await rawConsume(rawTopic, messages));
      log(`round ${round}/${repeat}: raw kafkajs consume + decodeEnvelope per record (what the bus must do at least)…`);
      runs.rawDecodeConsume.push(await rawConsume(rawTopic, messages, 'decode'));
      log(`round ${round}/${repeat}: bus consume (no-op handler)…`);
      runs.busConsume.push(await busConsume(busTopic, messages, { maxInFlight: 64 }, async () => {}));
      log(`round ${round}/${repeat}: bus consume, 20 ms handler, one partition, in-flight 256, ${slowMessages} records…`);
      await busProduce(slowTopic, slowMessages, 20_000);
      runs.busSlow.push(await busConsume(slowTopic, slowMessages, { maxInFlight: 256 }, () => sleep(20)));
      await deleteTopics(topics.splice(0));
    }
    for (const [k, list] of Object.entries(runs)) {
      result.results[k] = { ...list.reduce((a, b) => (b.perSec > a.perSec ? b : a)), allRuns: list.map((r) => r.perSec) };
    }
    if (backlog > 0) {
      const backlogTopic = await topic('backlog', 4);
      log(`producing a ${backlog}-record backlog…`);
      const t0 = now();
      await fastProduce(backlogTopic, backlog);
      log(`  took ${((now() - t0) / 1000).toFixed(1)} s; consuming it for ${rssSeconds} s in a child process…`);
      // Two consumers of the same backlog: a no-op handler fetches as fast as it can; a 20 ms handler
      // with 256 in flight keeps the buffer full the whole time.
      result.results.backlogRss = await runRssChild(backlogTopic, rssSeconds, 'noop');
      log(`  and for ${rssSeconds} s with the 20 ms handler…`);
      result.results.backlogRssSlow = await runRssChild(backlogTopic, rssSeconds, 'slow');
    }
  } finally {
    await deleteTopics(topics);
    await admin.close();
  }
  result.loadAverageAtEnd = os.loadavg().map((l) => +l.toFixed(2));
  const r = result.results;
  const slowTarget = 256 / 0.02;
  result.ratios = {
    produce: r.busProduce.perSec / r.rawProduce.perSec,
    consumeNoop: r.busConsume.perSec / r.rawConsume.perSec,
    consumeNoopVsRawDecode: r.busConsume.perSec / r.rawDecodeConsume.perSec,
    slowVsIdeal: r.busSlow.perSec / slowTarget,
  };
  result.targets = {
    produce: result.ratios.produce >= 0.8,
    consumeNoop: result.ratios.consumeNoop >= 0.8,
    slow: result.ratios.slowVsIdeal >= 0.8,
    // Only a backlog that was handled counts: dead-lettered records would measure another path.
    rss: r.backlogRss
      ? Math.max(r.backlogRss.maxRssMiB, r.backlogRssSlow.maxRssMiB) < 300 &&
        r.backlogRss.deadLettered + r.backlogRssSlow.deadLettered === 0
      : null,
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/bus.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  printTable(result, slowTarget);
}

function log(msg) {
  process.stderr.write(`${msg}\n`);
}

async function rawProduce(topic, n) {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  const chunk = 800; // ≈ 0.9 MiB per request, like the bus producer's batch cap
  const t0 = now();
  for (let i = 0; i < n; i += chunk) {
    const messages = [];
    for (let j = i; j < Math.min(n, i + chunk); j++) {
      const wire = encodeEnvelope(envelope(j));
      messages.push({ key: keyOf(j), value: wire.value, headers: wire.headers });
    }
    await producer.send({ topic, acks: -1, messages });
  }
  const ms = now() - t0;
  await producer.disconnect();
  return rate(n, ms);
}

async function busProduce(topic, n, tasks) {
  const producer = new BusProducer(kafka);
  await producer.connect();
  const window = 5000; // concurrent sends, as many callers would issue them
  const t0 = now();
  for (let i = 0; i < n; i += window) {
    const sends = [];
    for (let j = i; j < Math.min(n, i + window); j++) sends.push(producer.send(topic, keyOf(j), envelope(j, tasks)));
    await Promise.all(sends);
  }
  const ms = now() - t0;
  await producer.disconnect();
  return { ...rate(n, ms), requests: producer.counters.requests };
}

/** Backlog filler: plain kafkajs, no idempotence, several requests in flight, one encoded template. */
async function fastProduce(topic, n) {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  // One valid envelope per task (the contract ties execution_id to task_id and turn, so a record
  // whose task_id header alone was changed would be dead-lettered, never handled).
  const tasks = 10_000;
  const wires = Array.from({ length: Math.min(n, tasks) }, (_, t) => encodeEnvelope(envelope(t, tasks)));
  const chunk = 800;
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const from = next;
      next = Math.min(n, next + chunk);
      const messages = [];
      for (let j = from; j < next; j++)
        messages.push({ key: keyOf(j), value: wires[j % wires.length].value, headers: wires[j % wires.length].headers });
      await producer.send({ topic, acks: 1, messages });
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  await producer.disconnect();
}

/** Throughput from the first record seen to the n-th (group join time excluded, the same for both). */
async function rawConsume(topic, n, variant = 'plain') {
  const consumer = kafka.consumer({ groupId: `${topic}.raw-${variant}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let first = 0;
  let last = 0;
  await consumer.run({
    eachBatch: async ({ batch }) => {
      if (seen === 0) first = now();
      if (variant === 'decode') for (const m of batch.messages) decodeEnvelope({ headers: m.headers, value: m.value });
      seen += batch.messages.length;
      if (seen >= n && !last) last = now();
    },
  });
  while (!last) await sleep(20);
  await consumer.disconnect();
  return rate(n, last - first);
}

async function busConsume(topic, n, opts, handler) {
  const consumer = new BusConsumer(kafka, { groupId: `${topic}.bus`, topics: [topic], fromBeginning: true, ...opts });
  let seen = 0;
  let first = 0;
  let last = 0;
  let maxInFlight = 0;
  let handlerMs = 0;
  await consumer.start(async (env, ctx) => {
    const t = now();
    if (seen === 0 && first === 0) first = t;
    await handler(env, ctx);
    const end = now();
    handlerMs += end - t;
    if (++seen >= n && !last) last = end;
  });
  const probe = setInterval(() => (maxInFlight = Math.max(maxInFlight, consumer.stats().inFlight)), 5);
  while (!last) await sleep(20);
  clearInterval(probe);
  await consumer.stop();
  // meanHandlerMs shows timer lateness: above 20 ms for the slow handler means a saturated event loop.
  const out = { ...rate(n, last - first), meanHandlerMs: +(handlerMs / n).toFixed(2) };
  // Sampled from a timer: a no-op handler finishes within the tick that started it, so only the slow run shows it.
  if (opts.maxInFlight >= 256) out.maxInFlight = maxInFlight;
  return out;
}

function rate(n, ms) {
  return { records: n, seconds: +(ms / 1000).toFixed(2), perSec: Math.round((n / ms) * 1000) };
}

function runRssChild(topic, seconds, mode) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--rss-child', topic, String(seconds), mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`rss child exited ${code}`))));
  });
}

/** Child process: consumes the backlog with a no-op handler (fetching as fast as it can) and samples its RSS. */
async function rssChild(topic, seconds, mode) {
  const slow = mode === 'slow';
  const consumer = new BusConsumer(kafka, {
    groupId: `${topic}.rss-${mode}`,
    topics: [topic],
    fromBeginning: true,
    maxInFlight: slow ? 256 : 64,
  });
  let processed = 0;
  let maxRss = 0;
  let maxHeap = 0;
  let maxBuffered = 0;
  const sample = () => {
    const m = process.memoryUsage();
    maxRss = Math.max(maxRss, m.rss);
    maxHeap = Math.max(maxHeap, m.heapUsed);
    maxBuffered = Math.max(maxBuffered, consumer.stats().buffered);
  };
  const timer = setInterval(sample, 100);
  await consumer.start(async () => {
    if (slow) await sleep(20);
    processed++;
  });
  await sleep(seconds * 1000);
  sample();
  clearInterval(timer);
  const { deadLettered } = consumer.stats();
  await consumer.stop();
  const MiB = 2 ** 20;
  process.stdout.write(
    JSON.stringify({
      mode,
      seconds,
      processed,
      deadLettered,
      maxRssMiB: Math.round(maxRss / MiB),
      maxHeapMiB: Math.round(maxHeap / MiB),
      maxBuffered,
    }),
  );
  process.exit(0);
}

async function deleteTopics(topics) {
  const raw = kafka.admin();
  try {
    await raw.connect();
    const existing = new Set(await raw.listTopics());
    const victims = topics.filter((t) => existing.has(t));
    if (victims.length) await raw.deleteTopics({ topics: victims });
  } catch (err) {
    log(`could not delete bench topics: ${err.message}`);
  } finally {
    await raw.disconnect();
  }
}

function printTable(result, slowTarget) {
  const r = result.results;
  const x = (v) => `${v.toFixed(2)}x`;
  const rows = [
    ['produce', r.rawProduce.perSec, r.busProduce.perSec, x(result.ratios.produce), '>= 0.8x'],
    ['produce→consume, no work', r.rawConsume.perSec, r.busConsume.perSec, x(result.ratios.consumeNoop), '>= 0.8x'],
    [
      'produce→consume, raw + decodeEnvelope',
      r.rawDecodeConsume.perSec,
      r.busConsume.perSec,
      x(result.ratios.consumeNoopVsRawDecode),
      '(context)',
    ],
    [
      '20 ms handler, 1 partition, in-flight 256',
      Math.round(slowTarget),
      r.busSlow.perSec,
      x(result.ratios.slowVsIdeal),
      '>= 0.8x of 256/0.02 s',
    ],
  ];
  const head = ['measure (records/s)', 'raw kafkajs / ideal', 'bus', 'ratio', 'target'];
  const all = [head, ...rows.map((row) => row.map(String))];
  const widths = head.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  const line = (row) => `| ${row.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row.map(String)));
  for (const b of [r.backlogRss, r.backlogRssSlow].filter(Boolean)) {
    console.log(
      `\nbacklog ${result.params.backlog} records, ${b.mode} handler: consumer max RSS ${b.maxRssMiB} MiB (target < 300), ` +
        `max heap ${b.maxHeapMiB} MiB, max buffered ${b.maxBuffered}, ${b.processed} records handled (${b.deadLettered} dead-lettered) in ${b.seconds} s`,
    );
  }
  console.log(`\n20 ms handler: mean wall time per call ${r.busSlow.meanHandlerMs} ms, max in flight ${r.busSlow.maxInFlight}`);
  console.log(
    `best of ${result.params.repeat} interleaved rounds; load average ${result.loadAverageAtStart.join(' ')} at start, ${result.loadAverageAtEnd.join(' ')} at end`,
  );
  console.log(`\n${result.machine.cpus} CPUs, ${result.machine.memGiB} GiB, Node ${result.machine.node}, ${result.date}`);
  console.log(`Kafka ${result.machine.kafka.brokers.join(',')}, authentication: ${result.machine.kafka.authentication}`);
}
