import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { DeadLetterHeaders } from '@mesh/bus';
import { encodeEnvelope, Headers, newId, normalizeHeaders, TopicNames } from '@mesh/contract';
import { eventually, freshDatabase, uniquePrefix } from '../support/infra.js';
import { testKafka } from '../support/bus.js';
import { commandProducer, EventCollector, runTask, sendCommand } from '../agents/runtime-fixtures.js';
import { fc, runs } from './fuzz-support.js';
import { startTestAgents } from '../support/agents-runtime.js';

// The Kafka side of the fuzz suite: generated commands with missing, corrupt or hostile headers
// and payloads on an agent's command channel. Each must end in the channel's dead-letter topic
// with a reason (error code + message headers), and the worker must keep serving good commands.

const db = await freshDatabase('fuzz-kafka');
const prefix = uniquePrefix('fuzz-kafka');
const topics = new TopicNames(prefix);
await startTestAgents(prefix, db, {
  AGENTS_RUN: 'echo-agent',
});
const events = new EventCollector();
await events.start(topics);
const producer = await commandProducer();
const kafka = testKafka('fuzz-kafka');
const raw = kafka.producer();
await raw.connect();
after(() => raw.disconnect());

const valid = () => encodeEnvelope(runTask('echo-agent', 'acme', 'fuzz'));
const REQUIRED = [Headers.tenant, Headers.agentId, Headers.taskId, Headers.kind, Headers.schemaVersion, Headers.executionId];

/** One corruption of a valid encoded command: what it breaks is in `what` (printed on failure). */
const corrupted = fc.oneof(
  fc.constantFrom(...REQUIRED).map((h) => ({ what: `missing ${h}`, edit: (m: Msg) => void delete m.headers[h] })),
  fc
    .tuple(
      fc.constantFrom(Headers.tenant, Headers.kind, Headers.schemaVersion, Headers.executionId, Headers.deadlineUnixMs),
      fc.constantFrom('', 'NOT A TENANT', 'x'.repeat(5000), '\u0000', '-1', '9999', 'task.nope', 'é'),
    )
    .map(([h, v]) => ({ what: `${h}=${JSON.stringify(v.slice(0, 20))}`, edit: (m: Msg) => void (m.headers[h] = v) })),
  fc.uint8Array({ maxLength: 200 }).map((b) => ({
    what: `payload ${b.length} random bytes`,
    edit: (m: Msg) => void (m.value = Buffer.concat([Buffer.from('{'), Buffer.from(b)])),
  })),
  fc.jsonValue({ maxDepth: 3 }).map((v) => ({
    what: `payload ${JSON.stringify(v)?.slice(0, 40)}`,
    edit: (m: Msg) => void (m.value = Buffer.from(JSON.stringify({ turn: v, message: v }))),
  })),
  fc.constant({ what: 'empty payload', edit: (m: Msg) => void (m.value = Buffer.alloc(0)) }),
  fc.constant({ what: 'no headers at all', edit: (m: Msg) => void (m.headers = {}) }),
);
interface Msg {
  headers: Record<string, string>;
  value: Buffer;
}

test('corrupt commands end in the dead-letter topic with a reason, and the worker keeps serving', async () => {
  const samples = fc.sample(corrupted, { numRuns: runs(60), seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) });
  const sent: Array<{ marker: string; taskId: string; what: string }> = [];
  for (const s of samples) {
    const m = valid() as Msg;
    const taskId = m.headers[Headers.taskId];
    s.edit(m);
    const marker = newId();
    sent.push({ marker, taskId, what: s.what });
    // The marker travels in a header the runtime ignores, so each dead letter is matched to its sample.
    await raw.send({
      topic: topics.commands('echo-agent'),
      messages: [{ key: 'acme:echo-agent', value: m.value, headers: { ...m.headers, 'x-fuzz-marker': marker } }],
    });
  }
  // The worker is still alive: a good command after all the garbage completes.
  const good = runTask('echo-agent', 'acme', 'after the garbage');
  await sendCommand(producer, topics, good);
  assert.equal((await events.final(good.identity.taskId, 1, 60000)).body.state, 'TASK_STATE_COMPLETED');

  const dead = new Map<string, Record<string, string>>();
  const consumer = kafka.consumer({ groupId: `fuzz-dlq-${newId()}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  after(() => consumer.disconnect());
  await consumer.subscribe({ topic: topics.deadLetters(topics.commands('echo-agent')), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const h = normalizeHeaders(message.headers);
      if (h['x-fuzz-marker']) dead.set(h['x-fuzz-marker'], h);
    },
  });
  // A changed header can still be a well-formed command (tenant "9999" is a valid tenant id; the
  // internal plane trusts the dispatcher for tenancy): such a command runs and ends with a final
  // task event. What is never allowed is that a command vanishes.
  const unaccounted = () => sent.filter((s) => !dead.has(s.marker) && events.finals(s.taskId).length === 0);
  await eventually(`all ${sent.length} corrupt commands dead-lettered or finished`, () => unaccounted().length === 0, 60000, 200).catch(
    (e) => {
      throw new Error(
        `${(e as Error).message}; neither: ${unaccounted()
          .slice(0, 10)
          .map((s) => s.what)
          .join(' | ')}`,
      );
    },
  );
  const ran = sent.filter((s) => !dead.has(s.marker));
  process.stdout.write(`# ${dead.size} dead-lettered, ${ran.length} still well-formed and ran: ${ran.map((s) => s.what).join(', ')}\n`);
  assert.ok(dead.size >= sent.length / 2, 'most corruptions break the contract');
  for (const [, h] of dead) {
    assert.ok(h[DeadLetterHeaders.errorCode], 'a reason code');
    assert.ok(h[DeadLetterHeaders.error], 'a reason message');
    assert.equal(h[DeadLetterHeaders.sourceTopic], topics.commands('echo-agent'));
  }
});
