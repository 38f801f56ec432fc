// The console overview's "Teams and refusals" against a real dispatcher: its team bindings (GET
// /ops/teams with the console's ops token) and what it refused (its /metrics), each source named
// in the section when it cannot be read, never failing the page.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK, generateKeyPair } from 'jose';
import { startConsole } from '@mesh/app-cli';
import { encodeEnvelope, Envelopes } from '@mesh/contract';
import { eventually, testRun } from '../support/infra.js';
import { startTestDispatcher } from '../support/dispatcher-harness.js';
import { KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

const OPS_TOKEN = 'console-teams-ops-token';
const env = await startTestDispatcher('console-teams', {}, { DISPATCHER_OPS_TOKEN: OPS_TOKEN });
const { dir } = await startTestDirectory('console-teams-dir');

/** A console on this dispatcher (or another URL) with the given ops token. */
async function consoleWith(opsToken: string | undefined, dispatcherUrl = env.url) {
  const c = await startConsole(
    {
      directoryUrl: dir.url,
      dispatcherUrl,
      agentsUrl: 'http://127.0.0.1:9',
      token: KEYS.acme,
      ...(opsToken ? { opsToken } : {}),
      brokers: testRun().brokers,
      prefix: env.prefix,
    },
    { port: 0, sampleIntervalMs: 60_000 },
  );
  after(() => c.stop());
  return c;
}

interface Section {
  teams: Array<{
    name: string;
    tenant: string;
    agents: string[];
    kafkaPrincipal: string;
    keyIds: string[];
    revokedAt: string | null;
  }> | null;
  teamsUnavailable?: string;
  refusedEvents: Array<{ reason: string; count: number }> | null;
  refusedExchanges: Array<{ reason: string; count: number }> | null;
  metricsUnavailable?: string;
}
async function section(url: string): Promise<Section> {
  const res = await fetch(`${url}api/overview`);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { teams: Section }).teams;
}

test('the overview lists the team bindings with their principals and the refusals by reason', async () => {
  const { publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const put = await fetch(`${env.url}/ops/teams/words`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      tenant: 'acme',
      agents: ['word-count-agent'],
      eventKeys: { keys: [{ ...(await exportJWK(publicKey)), kid: 'words-key' }] },
      toolAudiences: ['billing-tools'],
      kafkaPrincipal: 'User:team-words',
    }),
  });
  assert.equal(put.status, 200, await put.text());

  // One event the dispatcher does not believe (unsigned, on the team events topic) and one token
  // exchange it refuses (a grant that does not verify).
  const wire = encodeEnvelope(
    Envelopes.status(
      {
        tenant: 'acme',
        agentId: 'word-count-agent',
        taskId: 'forged-task',
        contextId: 'c1',
        messageId: 'm1',
        executionId: 'acme:forged-task:0',
        subject: 'mallory',
        actor: 'worker',
        deadlineUnixMs: Date.now() + 60_000,
        startByUnixMs: Date.now() + 60_000,
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
      { seq: 1, state: 'TASK_STATE_WORKING', final: false },
    ),
  );
  const producer = env.kafka.producer();
  await producer.connect();
  await producer.send({
    topic: env.topics.teamEvents(),
    acks: -1,
    messages: [{ key: 'forged-task', value: wire.value, headers: wire.headers }],
  });
  await producer.disconnect();
  const exchange = await fetch(`${env.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'not.a.grant',
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      resource: 'billing-tools',
    }).toString(),
  });
  assert.equal(exchange.status, 400);

  const c = await consoleWith(OPS_TOKEN);
  const s = await eventually(
    'the unsigned event counted',
    async () => {
      const v = await section(c.url);
      return v.refusedEvents?.some((r) => r.reason === 'unsigned') ? v : undefined;
    },
    20_000,
    200,
  );
  assert.deepEqual(
    s.teams?.map((t) => [t.name, t.tenant, t.agents, t.kafkaPrincipal, t.keyIds, t.revokedAt]),
    [['words', 'acme', ['word-count-agent'], 'User:team-words', ['words-key'], null]],
  );
  assert.deepEqual(s.refusedEvents, [{ reason: 'unsigned', count: 1 }]);
  assert.deepEqual(s.refusedExchanges, [{ reason: 'unverified', count: 1 }]);
  assert.equal(s.teamsUnavailable, undefined);
  assert.equal(s.metricsUnavailable, undefined);
});

test('a source the console cannot read is named in the section; the page still answers', async () => {
  const noToken = await section((await consoleWith(undefined)).url);
  assert.equal(noToken.teams, null);
  assert.match(noToken.teamsUnavailable ?? '', /no ops token/);
  assert.ok(noToken.refusedEvents, 'the metrics need no token');

  const wrongToken = await section((await consoleWith('not-the-ops-token')).url);
  assert.equal(wrongToken.teams, null);
  assert.match(wrongToken.teamsUnavailable ?? '', /dispatcher answered 401 to GET \/ops\/teams/);

  const down = await section((await consoleWith(OPS_TOKEN, 'http://127.0.0.1:9')).url);
  assert.equal(down.teams, null);
  assert.match(down.teamsUnavailable ?? '', /cannot reach the dispatcher at http:\/\/127\.0\.0\.1:9/);
  assert.equal(down.refusedEvents, null);
  assert.equal(down.refusedExchanges, null);
  assert.match(down.metricsUnavailable ?? '', /cannot reach the dispatcher at http:\/\/127\.0\.0\.1:9/);
});
