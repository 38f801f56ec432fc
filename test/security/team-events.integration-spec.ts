// Team events: a team's worker signs its events onto the shared team events topic, and the
// dispatcher believes them only for the agents of the live team whose key signed them. A real
// dispatcher (Postgres, the authenticated broker), a real worker runtime in team mode, and records
// written straight to the team events topic by a forger holding a team's key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { CompactSign, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { TaskState, type Task } from '@a2a-js/sdk';
import { canonicalJson, decodeEnvelope, encodeEnvelope, Envelopes, Headers, type TaskEvent, type TaskRunCommand } from '@mesh/contract';
import { createLogger } from '@mesh/telemetry';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { sendRequest, userMessage } from '../support/a2a-fixtures.js';
import { startTestAgents } from '../support/agents-runtime.js';
import { startManualWorker } from '../support/manual-worker.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/infra.js';
import { metricSample } from '../support/metrics.js';

const OPS_TOKEN = 'team-events-ops-token';
const TEAM_A_AGENT = 'echo-agent'; // run by the team's worker (the runtime's sample echo agent)
const TEAM_B_AGENT = 'ledger-agent';
const PLATFORM_AGENT = 'platform-agent';

// The dispatcher's log lines, to find the refusals in.
const lines: Array<Record<string, unknown>> = [];
const logged = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
    done();
  },
});
const env = await startTestDispatcher(
  'team-events',
  { logger: createLogger('dispatcher', 'info', logged) },
  { DISPATCHER_OPS_TOKEN: OPS_TOKEN },
);
await publishAgents(env.kafka, env.topics, [agentRecord(TEAM_A_AGENT), agentRecord(TEAM_B_AGENT), agentRecord(PLATFORM_AGENT)]);

async function keyPair(kid: string): Promise<{ publicJwk: JWK; privateJwk: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  return { publicJwk: { ...(await exportJWK(publicKey)), kid }, privateJwk: { ...(await exportJWK(privateKey)), kid } };
}
const KA = await keyPair('team-a-key');
const KB = await keyPair('team-b-key');

interface TeamJson {
  name: string;
  keyIds: string[];
  revokedAt: string | null;
  [field: string]: unknown;
}
/** An `/ops/teams` answer: the fields of whichever shape it has (`{ error }`, `{ team }`, `{ teams }`). */
type OpsBody = { error: string; team: TeamJson; teams: TeamJson[] };

async function ops(
  method: string,
  path: string,
  body?: unknown,
  token: string | null = OPS_TOKEN,
): Promise<{ status: number; body: OpsBody }> {
  const res = await fetch(`${env.url}/ops/teams${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as OpsBody };
}

const binding = (agent: string, key: JWK) => ({
  tenant: 'acme',
  agents: [agent],
  eventKeys: { keys: [key] },
  toolAudiences: ['billing-tools'],
  kafkaPrincipal: `User:team-${agent}`,
});

/** A record on the team events topic: the event, signed (detached JWS over its canonical JSON) unless `signature` says otherwise. */
async function forge(event: TaskEvent, opts: { key?: JWK; signature?: string; tamper?: (e: TaskEvent) => TaskEvent } = {}): Promise<void> {
  const wire = encodeEnvelope(opts.tamper ? opts.tamper(event) : event);
  let signature = opts.signature;
  if (opts.key) {
    const jws = await new CompactSign(new TextEncoder().encode(canonicalJson(decodeEnvelope(encodeEnvelope(event)))))
      .setProtectedHeader({ alg: 'EdDSA', kid: opts.key.kid! })
      .sign(await importJWK(opts.key, 'EdDSA'));
    const [h, , s] = jws.split('.');
    signature = `${h}..${s}`;
  }
  const producer = env.kafka.producer();
  await producer.connect();
  try {
    await producer.send({
      topic: env.topics.teamEvents(),
      acks: -1,
      messages: [
        {
          key: event.identity.taskId,
          value: wire.value,
          headers: { ...wire.headers, ...(signature ? { [Headers.signature]: signature } : {}) },
        },
      ],
    });
  } finally {
    await producer.disconnect();
  }
}

const refused = async (reason: string) => (await metricSample(env.url, 'mesh_events_refused_total', { reason })) ?? 0;
const working = (cmd: TaskRunCommand, seq = 1) => Envelopes.status(cmd.identity, { seq, state: 'TASK_STATE_WORKING', final: false });

/** Waits until the refusal is counted and logged naming the task; returns the log line. */
async function refusal(reason: string, before: number, taskId: string): Promise<Record<string, unknown>> {
  await eventually(`${reason} counted`, async () => (await refused(reason)) > before, 20_000, 100);
  return eventually(`${reason} logged`, () => lines.find((l) => l.reason === reason && l.task === taskId));
}

// Once the dispatcher's catalog has read the cards.
const clientOf = (agent: string) => eventually(`${agent}'s card`, () => a2aClient(env.url, agent, 'JSONRPC').catch(() => undefined));
const client = await clientOf(TEAM_A_AGENT);
const clientB = await clientOf(TEAM_B_AGENT);
const clientP = await clientOf(PLATFORM_AGENT);
const workerB = await startManualWorker(env.kafka, env.topics, TEAM_B_AGENT);
const workerP = await startManualWorker(env.kafka, env.topics, PLATFORM_AGENT);
const nonBlocking = (text: string) => sendRequest(userMessage(text), { returnImmediately: true });
const stateOf = async (c: typeof client, id: string) => (await c.getTask({ id, tenant: '', historyLength: undefined })).status?.state;

// The team's worker: the runtime in team mode, signing with the team's private key.
await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: TEAM_A_AGENT,
  AGENTS_EVENT_KEY: JSON.stringify(KA.privateJwk),
  EVENTS_TOPIC_PARTITIONS: '3',
});

test('/ops/teams: no or a wrong token is 401, a bad body 400, a second owner of an agent or key id 409', async () => {
  assert.equal((await ops('GET', '', undefined, null)).status, 401);
  assert.equal((await ops('GET', '', undefined, 'wrong-token-here')).status, 401);
  const unauthorized = await ops('PUT', '/team-a', binding(TEAM_A_AGENT, KA.publicJwk), 'wrong-token-here');
  assert.equal(unauthorized.status, 401);
  assert.match(unauthorized.body.error, /DISPATCHER_OPS_TOKEN/);

  const bad: Array<[string, unknown, RegExp]> = [
    ['/team-a', { ...binding(TEAM_A_AGENT, KA.publicJwk), eventKeys: { keys: [KA.privateJwk] } }, /private key/],
    ['/team-a', { ...binding('Not An Agent', KA.publicJwk) }, /agent id/],
    ['/team-a', { ...binding(TEAM_A_AGENT, { ...KA.publicJwk, crv: 'P-256' }) }, /crv/],
    ['/team-a', { ...binding(TEAM_A_AGENT, { ...KA.publicJwk, kid: undefined }) }, /kid/],
    ['/Team_A', binding(TEAM_A_AGENT, KA.publicJwk), /team name/],
    ['/team-a', '{"tenant": ', /request body/],
  ];
  for (const [path, body, problem] of bad) {
    const res = await ops('PUT', path, body);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error, problem);
  }

  const a = await ops('PUT', '/team-a', binding(TEAM_A_AGENT, KA.publicJwk));
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.deepEqual(
    { ...a.body.team, createdAt: undefined },
    {
      name: 'team-a',
      tenant: 'acme',
      agents: [TEAM_A_AGENT],
      toolAudiences: ['billing-tools'],
      kafkaPrincipal: `User:team-${TEAM_A_AGENT}`,
      keyIds: ['team-a-key'],
      createdAt: undefined,
      revokedAt: null,
    },
  );
  const b = await ops('PUT', '/team-b', binding(TEAM_B_AGENT, KB.publicJwk));
  assert.equal(b.status, 200, JSON.stringify(b.body));
  // The same binding again is a replace, not a conflict.
  assert.equal((await ops('PUT', '/team-b', binding(TEAM_B_AGENT, KB.publicJwk))).status, 200);

  const takesAgent = await ops('PUT', '/team-c', binding(TEAM_A_AGENT, (await keyPair('team-c-key')).publicJwk));
  assert.equal(takesAgent.status, 409);
  assert.match(takesAgent.body.error, /agent echo-agent belongs to team team-a/);
  const takesKid = await ops('PUT', '/team-c', binding('other-agent', KA.publicJwk));
  assert.equal(takesKid.status, 409);
  assert.match(takesKid.body.error, /key id team-a-key belongs to team team-a/);
  assert.equal((await ops('DELETE', '/no-such-team')).status, 404);

  const list = await ops('GET', '');
  assert.equal(list.status, 200);
  assert.deepEqual(
    list.body.teams.map((t: { name: string; keyIds: string[] }) => [t.name, t.keyIds]),
    [
      ['team-a', ['team-a-key']],
      ['team-b', ['team-b-key']],
    ],
  );
  assert.equal(JSON.stringify(list.body).includes(String(KA.publicJwk.x)), false, 'keys are listed by id only');
});

test("a team's worker in team mode completes its agent's task: its signed events are believed", async () => {
  const task = (await client.sendMessage(sendRequest(userMessage('hello team')))) as Task;
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status));
  // They came by the team events topic: nothing of the team's worker is on the platform's.
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const platform = await admin.fetchTopicOffsets(env.topics.events());
    assert.equal(
      platform.reduce((n, p) => n + Number(p.high), 0),
      0,
      'the team worker wrote nothing to the platform events topic',
    );
  } finally {
    await admin.disconnect();
  }
});

test("events the team's key signs for another team's agent, a platform agent or another task are dropped, counted and logged", async () => {
  const taskB = (await clientB.sendMessage(nonBlocking('for b'))) as Task;
  const runB = await workerB.run(taskB.id);
  const taskP = (await clientP.sendMessage(nonBlocking('for platform'))) as Task;
  const runP = await workerP.run(taskP.id);

  let before = await refused('not-team-agent');
  await forge(working(runB), { key: KA.privateJwk });
  const line = await refusal('not-team-agent', before, taskB.id);
  assert.deepEqual(
    [line.agent, line.kid, line.topic, typeof line.partition, typeof line.offset],
    [TEAM_B_AGENT, 'team-a-key', env.topics.teamEvents(), 'number', 'string'],
  );
  assert.equal(JSON.stringify(line).includes('TASK_STATE_WORKING'), false, 'the log line holds no payload');

  before = await refused('not-team-agent');
  await forge(working(runP), { key: KA.privateJwk });
  await refusal('not-team-agent', before, taskP.id);

  // Team B's key, B's agent, but A's task: the task's own agent refutes it.
  const taskA = (await client.sendMessage(sendRequest(userMessage('a second one')))) as Task;
  before = await refused('identity-mismatch');
  await forge(Envelopes.status({ ...runB.identity, taskId: taskA.id }, { seq: 9, state: 'TASK_STATE_FAILED', final: true }), {
    key: KB.privateJwk,
  });
  await refusal('identity-mismatch', before, taskA.id);
  assert.equal(await stateOf(client, taskA.id), TaskState.TASK_STATE_COMPLETED);

  before = await refused('unsigned');
  await forge(working(runB));
  await refusal('unsigned', before, taskB.id);

  before = await refused('bad-signature');
  await forge(working(runB), {
    key: KB.privateJwk,
    tamper: (e) => ({ ...e, body: { ...e.body, state: 'TASK_STATE_COMPLETED' } }) as TaskEvent,
  });
  await refusal('bad-signature', before, taskB.id);

  before = await refused('unknown-key');
  await forge(working(runB), { key: (await keyPair('nobody-key')).privateJwk });
  await refusal('unknown-key', before, taskB.id);

  assert.equal(await stateOf(clientB, taskB.id), TaskState.TASK_STATE_SUBMITTED, 'nothing forged reached B');
  assert.equal(await stateOf(clientP, taskP.id), TaskState.TASK_STATE_SUBMITTED, 'nothing forged reached the platform agent');
  // The control: B's own key moves B's task, after every refused record on the same partition.
  await forge(working(runB), { key: KB.privateJwk });
  await eventually('B works', async () => (await stateOf(clientB, taskB.id)) === TaskState.TASK_STATE_WORKING, 20_000, 100);
});

test("after a team is revoked its worker's events are refused as revoked; its task stays where it was", async () => {
  assert.equal((await ops('DELETE', '/team-a')).status, 204);
  assert.equal((await ops('DELETE', '/team-a')).status, 204, 'revoking twice is no error');
  const listed = (await ops('GET', '')).body.teams.find((t: { name: string }) => t.name === 'team-a');
  assert.ok(listed?.revokedAt);
  const before = await refused('revoked');
  const task = (await client.sendMessage(nonBlocking('after revocation'))) as Task;
  const line = await refusal('revoked', before, task.id);
  assert.equal(line.kid, 'team-a-key');
  await sleep(500);
  assert.equal(await stateOf(client, task.id), TaskState.TASK_STATE_SUBMITTED);
});
