// Team workers hold no tool-token secret: the dispatcher signs a grant onto each run command, the
// worker exchanges it at POST /oauth/token (RFC 8693) for a token bound to one tool server (RFC
// 8707), and billing-tools verifies that token against the dispatcher's JWKS. Real dispatcher,
// agents runtime, billing-tools, Kafka and Postgres; the refusals go at the real endpoints.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type Task } from '@a2a-js/sdk';
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, exportJWK, SignJWT } from 'jose';
import { textMessage as cliTextMessage } from '@mesh/app-cli';
import { refundAgent } from '@mesh/app-agents';
import { loadBillingToolsConfig, startBillingTools } from '@mesh/app-billing-tools';
import { ToolGrants } from '@mesh/contract';
import { HmacToolTokenMinter, ToolMeta } from '@mesh/tool-gateway';
import { eventually, sql } from '../support/infra.js';
import { a2aClient, agentRecord, publishAgents, startTestDispatcher } from '../support/dispatcher-harness.js';
import { startTestAgents, TEST_TOOL_TOKEN_SECRET } from '../support/agents-runtime.js';
import { startManualWorker } from '../support/manual-worker.js';
import { metricSample } from '../support/metrics.js';
import { exchangeGrant, initializeWith, recordingProxy } from '../support/tool-tokens.js';

const issuer = 'https://dispatcher.grants.test';
// The dispatcher's key, from a file as in production; the spec keeps it to sign an expired grant.
const { privateKey } = generateKeyPairSync('ed25519');
const keyDir = mkdtempSync(join(tmpdir(), 'grants-'));
const keyFile = join(keyDir, 'dispatcher-signing-key.pem');
writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
const kid = await calculateJwkThumbprint(await exportJWK(privateKey), 'sha256');

const env = await startTestDispatcher(
  'sec-grants',
  // manual-agent may get tokens for the two billing servers only (a team registry's policy, in small).
  {
    toolAudiencePolicy: {
      allowed: (agentId) => Promise.resolve(agentId === 'manual-agent' ? new Set(['billing-tools', 'billing-tools-eu']) : 'any'),
    },
  },
  { DISPATCHER_ISSUER: issuer, DISPATCHER_SIGNING_KEY_FILE: keyFile },
);
const tokenUrl = `${env.url}${ToolGrants.tokenPath}`;
const jwksUrl = `${env.url}${ToolGrants.jwksPath}`;

/** billing-tools trusting only the dispatcher's JWKS (no shared secret), for `audience`. */
async function jwksBillingTools(audience: string) {
  const b = await startBillingTools({
    ...loadBillingToolsConfig({
      DATABASE_URL: env.databaseUrl,
      BILLING_TOOLS_JWKS_URL: jwksUrl,
      BILLING_TOOLS_TOKEN_ISSUER: issuer,
      BILLING_TOKEN_AUDIENCE: audience,
    }),
    BILLING_TOOLS_PORT: 0,
  });
  after(() => b.stop());
  return b;
}
const billing = await jwksBillingTools('billing-tools');
const billingEu = await jwksBillingTools('billing-tools-eu');

// A recording proxy in front of billing-tools: the spec reads the tokens the worker sent.
const { url: proxied, seen } = await recordingProxy(billing.mcpUrl);

// No AGENTS_TOOL_TOKEN_SECRET: the worker has only the token endpoint.
await startTestAgents(env.prefix, env.databaseUrl, {
  AGENTS_RUN: 'refund-agent',
  AGENTS_TOKEN_URL: tokenUrl,
  AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: proxied } }),
});
await publishAgents(env.kafka, env.topics, [
  agentRecord('refund-agent', {
    card: { ...agentRecord('refund-agent').card, name: refundAgent.card.name, skills: refundAgent.card.skills },
    channel: { keyTemplate: refundAgent.channel.keyTemplate, partitions: refundAgent.channel.partitions },
  }),
  agentRecord('manual-agent'),
]);
const manual = await startManualWorker(env.kafka, env.topics, 'manual-agent');
after(() => manual.stop());
await eventually('agents served', async () => (await fetch(`${env.url}/a2a/manual-agent/.well-known/agent-card.json`)).ok);

/** POST /oauth/token for billing-tools (`extra` adds or overrides parameters); never cached. */
async function exchange(grant: string, extra: Record<string, string> = {}) {
  const { status, headers, body } = await exchangeGrant(tokenUrl, grant, { resource: 'billing-tools', ...extra });
  assert.equal(headers.get('cache-control'), 'no-store');
  return { status, body };
}

const refused = (reason: string) => metricSample(env.url, 'mesh_token_exchanges_total', { outcome: 'refused', reason }).then((n) => n ?? 0);

/** A task of manual-agent (accepted, not answered) and the grant its run command carries. */
async function manualTask(): Promise<{ task: Task; grant: string; cmd: Awaited<ReturnType<typeof manual.run>> }> {
  const client = await a2aClient(env.url, 'manual-agent', 'JSONRPC');
  const task = (await client.sendMessage(cliTextMessage('work', {}, false))) as Task;
  const cmd = await manual.run(task.id);
  assert.ok(cmd.grant, 'the run command carries a grant');
  return { task, grant: cmd.grant, cmd };
}

test('the JWKS publishes the configured key under its RFC 7638 thumbprint', async () => {
  const res = await fetch(jwksUrl);
  assert.equal(res.status, 200);
  const { keys } = (await res.json()) as { keys: Array<Record<string, unknown>> };
  assert.deepEqual(
    keys.map((k) => [k.kid, k.kty, k.crv, k.alg, k.d]),
    [[kid, 'OKP', 'Ed25519', 'EdDSA', undefined]],
  );
});

test('a worker without the secret completes a refund; billing-tools saw a JWKS-verified token naming tenant, subject and task', async () => {
  const client = await a2aClient(env.url, 'refund-agent', 'JSONRPC', 'demo-globex');
  const done = (await client.sendMessage(cliTextMessage('I was charged twice for INV-3107, please refund it.', {}, true))) as Task;
  assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
  const refunds = await sql<{ tenant: string; subject: string }>(
    env.databaseUrl,
    `SELECT tenant, subject FROM billing.refunds WHERE invoice_id = 'INV-3107'`,
  );
  assert.equal(refunds.length, 1);
  const calls = seen
    .filter((s) => s.body.includes('"tools/call"'))
    .map((s) => (JSON.parse(s.body) as { params: { _meta?: Record<string, unknown> } }).params._meta?.[ToolMeta.token] as string);
  assert.ok(calls.length >= 1);
  for (const token of calls) {
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'EdDSA', kid, typ: 'at+jwt' });
    const c = decodeJwt(token);
    assert.equal(c.iss, issuer);
    assert.equal(c.aud, 'billing-tools');
    assert.equal(c.tenant, refunds[0].tenant);
    assert.equal(c.tenant, 'globex');
    assert.equal(c.sub, refunds[0].subject);
    assert.equal(c.task_id, done.id);
    assert.equal(c.agent_id, 'refund-agent');
    assert.equal((c.act as { sub: string }).sub, 'agent:refund-agent');
    assert.ok((c.exp as number) - (c.iat as number) <= 60);
  }
  assert.match(await (await fetch(`${env.url}/metrics`)).text(), /^mesh_grants_signed_total [1-9]/m, 'grants are counted');
});

test('a grant is exchanged for a token of one audience: refused by another billing-tools, accepted by its own', async () => {
  const { grant, cmd } = await manualTask();
  const claims = decodeJwt(grant);
  assert.deepEqual(
    [claims.iss, claims.aud, claims.task_id, claims.execution_id],
    [issuer, tokenUrl.replace(env.url, issuer), cmd.identity.taskId, cmd.identity.executionId],
  );
  const { status, body } = await exchange(grant);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.token_type, 'Bearer');
  assert.equal(body.issued_token_type, ToolGrants.accessTokenType);
  const token = body.access_token as string;
  assert.notEqual(await initializeWith(billing.mcpUrl, token), 401, 'its own audience takes it');
  assert.equal(await initializeWith(billingEu.mcpUrl, token), 401, 'another audience refuses it');
  // The grant itself is no tool token anywhere.
  assert.equal(await initializeWith(billing.mcpUrl, grant), 401);
  // A connection token opens a session and names no tenant.
  const conn = await exchange(grant, { requested_token_type: ToolGrants.connectionTokenType });
  assert.equal(conn.status, 200);
  assert.equal(decodeJwt(conn.body.access_token as string).tenant, undefined);
  assert.notEqual(await initializeWith(billing.mcpUrl, conn.body.access_token as string), 401);
});

test('tokens the worker signs itself are refused: HS256 with a guessed secret, Ed25519 with its own key', async () => {
  const hs = await new HmacToolTokenMinter(TEST_TOOL_TOKEN_SECRET).mint({
    audience: 'billing-tools',
    tenant: 'globex',
    subject: 'bob',
    taskId: 't',
  });
  assert.equal(await initializeWith(billing.mcpUrl, hs), 401);
  const own = generateKeyPairSync('ed25519').privateKey;
  const forged = await new SignJWT({ tenant: 'globex', task_id: 't', agent_id: 'refund-agent' })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience('billing-tools')
    .setSubject('bob')
    .setJti(randomUUID())
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(own);
  assert.equal(await initializeWith(billing.mcpUrl, forged), 401);
});

test('refusals: expired, tampered, finished or canceled task → invalid_grant; a resource not allowed → invalid_target; all counted', async () => {
  const before = {
    expired: await refused('expired'),
    unverified: await refused('unverified'),
    finished: await refused('task_finished'),
    target: await refused('resource_not_allowed'),
  };
  const { grant, cmd } = await manualTask();
  const claims = decodeJwt(grant);

  // Expired: signed with the dispatcher's own key, but an hour old.
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({ ...claims, iat: now - 7200, exp: now - 3600 })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: ToolGrants.grantTyp })
    .sign(privateKey);
  assert.deepEqual((await exchange(expired)).body.error, 'invalid_grant');
  // Tampered: the same claims (another tenant) signed by another key.
  const tampered = await new SignJWT({ ...claims, tenant: 'globex' })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: ToolGrants.grantTyp })
    .sign(generateKeyPairSync('ed25519').privateKey);
  const t = await exchange(tampered);
  assert.equal(t.status, 400);
  assert.equal(t.body.error, 'invalid_grant');
  // A resource the policy does not allow manual-agent.
  const target = await exchange(grant, { resource: 'crm-tools' });
  assert.equal(target.status, 400);
  assert.equal(target.body.error, 'invalid_target');
  assert.equal((await exchange(grant, { grant_type: 'client_credentials' })).body.error, 'unsupported_grant_type');

  // The task completes: its grant gets no more tokens.
  assert.equal((await exchange(grant)).status, 200);
  await manual.emit(cmd, [
    { seq: 0, artifact: 'done' },
    { seq: 1, state: 'COMPLETED' },
  ]);
  const client = await a2aClient(env.url, 'manual-agent', 'JSONRPC');
  await eventually(
    'the task is completed',
    async () =>
      (await client.getTask({ id: cmd.identity.taskId, tenant: '', historyLength: undefined })).status?.state ===
      TaskState.TASK_STATE_COMPLETED,
  );
  const finished = await exchange(grant);
  assert.equal(finished.status, 400);
  assert.equal(finished.body.error, 'invalid_grant');

  // A canceled task's grant neither.
  const second = await manualTask();
  assert.equal((await exchange(second.grant)).status, 200);
  await client.cancelTask({ id: second.task.id, tenant: '', metadata: undefined });
  assert.equal((await exchange(second.grant)).body.error, 'invalid_grant');

  assert.ok((await refused('expired')) > before.expired);
  assert.ok((await refused('unverified')) > before.unverified);
  assert.equal((await refused('task_finished')) - before.finished, 2);
  assert.ok((await refused('resource_not_allowed')) > before.target);
});
