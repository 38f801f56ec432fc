// A worker whose agents call a tool server that takes only audience-bound tokens (refund-agent's
// billing-tools) refuses to start without a way to get tokens (AGENTS_TOKEN_URL, or the legacy
// AGENTS_TOOL_TOKEN_SECRET): it would report healthy and fail every task. Refused before it
// registers a card or consumes a command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { freshDatabase, testRun } from '../support/infra.js';
import { freePort, repoRoot, spawnNode } from '../support/processes.js';
import { client, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';

const { dir, prefix } = await startTestDirectory('tool-token-secret');
const api = client(dir.url);
const db = await freshDatabase('tool-token-secret');
const workerEnv = (patch: Record<string, string>) => ({
  KAFKA_BROKERS: testRun().brokers.join(','),
  TOPIC_PREFIX: prefix,
  DATABASE_URL: db,
  AGENTS_DIRECTORY_URL: dir.url,
  AGENTS_DIRECTORY_TOKEN: KEYS.acme,
  ...patch,
});

test('the worker process without the tool-token secret exits with one line naming it; nothing is registered', async () => {
  const env = workerEnv({ AGENTS_RUN: 'echo-agent,refund-agent', AGENTS_PORT: String(await freePort()) });
  // The environment of the test run must not lend it the secret.
  const worker = spawnNode(join(repoRoot, 'apps/agents/dist/main.js'), { ...env, AGENTS_TOOL_TOKEN_SECRET: undefined });
  const { code } = await worker.exited;
  assert.equal(code, 1, worker.stderr());
  assert.match(
    worker.stderr(),
    /^agents: failed to start: AGENTS_TOKEN_URL is not set, but refund-agent \(server "billing", audience billing-tools\) call a tool server/m,
  );
  for (const id of ['echo-agent', 'refund-agent']) {
    const card = await api(KEYS.acme, 'GET', `/v1/agents/${id}`);
    assert.equal(card.status, 404, `${id} was not registered by a worker that could not run it`);
  }
});

test('in process: CONFIG_INVALID; the same worker with the secret, or without agents that need it, starts', async () => {
  const config = (patch: Record<string, string>) => ({ ...loadAgentsConfig(workerEnv(patch)), AGENTS_PORT: 0 });
  await assert.rejects(startAgents(config({ AGENTS_RUN: 'refund-agent' }), sampleAgents), (err: { code?: string; message?: string }) => {
    assert.equal(err.code, 'CONFIG_INVALID');
    assert.match(err.message ?? '', /npm start writes it to \.mesh\/local\.env/);
    return true;
  });
  // An agent without such a server needs no secret.
  const echo = await startAgents(config({ AGENTS_RUN: 'echo-agent' }), sampleAgents);
  try {
    assert.equal((await fetch(`${echo.url}/healthz`)).status, 200);
  } finally {
    await echo.stop();
  }
  const refund = await startAgents(
    config({ AGENTS_RUN: 'refund-agent', AGENTS_TOOL_TOKEN_SECRET: 'a-secret-of-sixteen-chars-or-more' }),
    sampleAgents,
  );
  try {
    assert.equal((await fetch(`${refund.url}/healthz`)).status, 200);
  } finally {
    await refund.stop();
  }
  // A team worker: no secret, the dispatcher's token endpoint instead.
  const exchanging = await startAgents(
    config({ AGENTS_RUN: 'refund-agent', AGENTS_TOKEN_URL: 'http://127.0.0.1:9/oauth/token' }),
    sampleAgents,
  );
  try {
    assert.equal((await fetch(`${exchanging.url}/healthz`)).status, 200);
  } finally {
    await exchanging.stop();
  }
});
