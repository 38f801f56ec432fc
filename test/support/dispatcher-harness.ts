import { after } from 'node:test';
import type { Kafka } from 'kafkajs';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { createKafka, ensureTopics } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { DEFAULT_COMMAND_PARTITIONS, TopicNames, type AgentRecord, type TopicDefinitions } from '@mesh/contract';
import { DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { loadDispatcherConfig, startDispatcher, type DispatcherOverrides, type RunningDispatcher } from '@mesh/app-dispatcher';
import { eventually, freshDatabase, testRun, uniquePrefix } from './infra.js';
import { freePort, spawnNode, type SpawnedProcess } from './processes.js';

/** The two A2A bindings the dispatcher serves. */
export type Binding = 'JSONRPC' | 'HTTP+JSON';
export const BINDINGS: Binding[] = ['JSONRPC', 'HTTP+JSON'];

/** A dispatcher started in-process on a fresh database and topic prefix. */
export interface DispatcherEnv {
  dispatcher: RunningDispatcher;
  url: string;
  prefix: string;
  databaseUrl: string;
  topics: TopicNames;
  kafka: Kafka;
  env: Record<string, string>;
  overrides: DispatcherOverrides;
  /** Starts another dispatcher on the same database and topics (restart, replicas). */
  restart(overrides?: DispatcherOverrides): Promise<RunningDispatcher>;
}

/** Starts a dispatcher for one spec; everything it started is stopped when the spec ends. */
export async function startTestDispatcher(
  label: string,
  overrides: DispatcherOverrides = {},
  extraEnv: Record<string, string> = {},
): Promise<DispatcherEnv> {
  const run = testRun();
  const started: RunningDispatcher[] = [];
  // Registered before freshDatabase's hook: after() hooks run in order, and the dispatchers must
  // stop before their database is dropped.
  after(async () => {
    for (const d of started) await d.stop().catch(() => undefined);
  });
  const prefix = uniquePrefix(label);
  const databaseUrl = await freshDatabase(label);
  const env = {
    KAFKA_BROKERS: run.brokers.join(','),
    TOPIC_PREFIX: prefix,
    DATABASE_URL: databaseUrl,
    EVENTS_TOPIC_PARTITIONS: '3',
    // Test workers send no heartbeats and bursts are large: admission is tested on its own.
    DISPATCHER_REQUIRE_HEALTHY_WORKER: 'false',
    DISPATCHER_TENANT_RATE_PER_S: '100000',
    DISPATCHER_TENANT_BURST: '100000',
    DISPATCHER_TENANT_BYTES_PER_S: '0',
    ...extraEnv,
  };
  const config = { ...loadDispatcherConfig(env), DISPATCHER_PORT: 0 };
  // No directory here: the spec stands in for it, as the owner of the cards and heartbeats topics.
  await standInForDirectory(createKafka({ brokers: run.brokers, clientId: `test-${label}-topics` }), topicDefinitions(config));
  const allOverrides = { auth: loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS }), ...overrides };
  const dispatcher = await startDispatcher(config, allOverrides);
  started.push(dispatcher);
  const kafka = createKafka({ brokers: run.brokers, clientId: `test-${label}` });
  return {
    dispatcher,
    url: dispatcher.url,
    prefix,
    databaseUrl,
    topics: new TopicNames(prefix),
    kafka,
    env,
    overrides: allOverrides,
    async restart(replace?: DispatcherOverrides) {
      const d = await startDispatcher(config, replace ? { ...allOverrides, ...replace } : allOverrides);
      started.push(d);
      return d;
    },
  };
}

/**
 * Another replica of `env` (same database and topics) in a process of its own, so a spec can
 * SIGKILL it; resolves once it serves `agentId`'s card.
 */
export async function startReplicaProcess(env: DispatcherEnv, agentId: string): Promise<{ url: string; proc: SpawnedProcess }> {
  const port = await freePort();
  const proc = spawnNode('apps/dispatcher/dist/main.js', { ...env.env, DISPATCHER_PORT: String(port), AUTH_API_KEYS: DEMO_API_KEYS });
  const url = `http://localhost:${port}`;
  const card = `${url}/a2a/${agentId}/.well-known/agent-card.json`;
  await eventually('the replica process is up', async () => (await fetch(card).catch(() => undefined))?.ok, 60000, 200);
  return { url, proc };
}

/**
 * Creates the topics the directory owns and a dispatcher waits for (cards, heartbeats), for a spec
 * that runs a dispatcher without a directory; call it before the dispatcher starts.
 */
export async function standInForDirectory(kafka: Kafka, definitions: TopicDefinitions): Promise<void> {
  await ensureTopics(kafka, [definitions.cards(), definitions.heartbeats()]);
}

/** An agent record as the directory would publish it. */
export function agentRecord(id: string, patch: Partial<AgentRecord> = {}): AgentRecord {
  return {
    id,
    tenant: 'acme',
    visibility: 'public',
    version: 1,
    card: {
      name: `Agent ${id}`,
      description: 'test agent',
      version: '1.0.0',
      supportedInterfaces: [{ url: 'http://worker.invalid/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'echo', name: 'Echo', description: 'echoes', tags: ['test'] }],
    },
    channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 2 },
    retired: false,
    updatedAt: new Date().toISOString(),
    ...patch,
  };
}

/**
 * Registers agents as the directory does: creates each one's command topic (the directory owns
 * them; the dispatcher never creates one) and publishes the records to the cards topic.
 */
export async function publishAgents(kafka: Kafka, topics: TopicNames, records: AgentRecord[]): Promise<void> {
  await ensureTopics(
    kafka,
    records.map((r) => ({ name: topics.commands(r.id), partitions: r.channel?.partitions || DEFAULT_COMMAND_PARTITIONS, grow: false })),
  );
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({ topic: topics.cards(), messages: records.map((r) => ({ key: r.id, value: JSON.stringify(r) })) });
  } finally {
    await producer.disconnect();
  }
}

/**
 * A fetch that adds the bearer token (the SDK client's transports take a fetch implementation)
 * and, like a browser's connection pool, keeps at most `maxInFlight` requests on the wire: a
 * thousand simultaneous connects would overflow the listen backlog and be reset by the kernel.
 */
export function authFetch(token: string | undefined, maxInFlight = 128, base: typeof fetch = fetch): typeof fetch {
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  return async (input, init) => {
    if (inFlight >= maxInFlight) await new Promise<void>((r) => waiting.push(r));
    inFlight += 1;
    try {
      const headers = new Headers(init?.headers);
      if (token) headers.set('authorization', `Bearer ${token}`);
      const res = await base(input, { ...init, headers });
      // Read the body before giving the slot back, so the slot really covers the exchange.
      const body = await res.arrayBuffer();
      const empty = res.status === 204 || res.status === 205 || res.status === 304;
      return new Response(empty ? null : body, { status: res.status, statusText: res.statusText, headers: res.headers });
    } finally {
      inFlight -= 1;
      waiting.shift()?.();
    }
  };
}

/** The official SDK client for one agent, discovered from its card, on the given binding. */
export async function a2aClient(url: string, agentId: string, binding: Binding, token = 'demo-acme'): Promise<Client> {
  return a2aClientWith(authFetch(token), url, agentId, binding);
}

/** The official SDK client for one agent over the given fetch (e.g. one that does not buffer streams). */
export async function a2aClientWith(fetchImpl: typeof fetch, url: string, agentId: string, binding: Binding): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      preferredTransports: [binding],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(`${url}/a2a/${agentId}/`);
}

export { rawRequest } from './raw-http.js';
