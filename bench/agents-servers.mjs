// Child process of bench/agents.mjs: starts the dispatcher (no demo worker), publishes the
// echo-agent record as the directory would. Prints its URL as one JSON line. (The MCP tool server
// is a process of its own, bench/mcp-wait-server.mjs.)
import { DEMO_API_KEYS, loadAuthOptions } from '@mesh/auth';
import { createKafka, ensureTopics } from '@mesh/bus';
import { topicDefinitions } from '@mesh/config';
import { TopicNames } from '@mesh/contract';
import { loadDispatcherConfig, startDispatcher } from '@mesh/app-dispatcher';
import { echoAgent } from '@mesh/app-agents';
import { kafkaBrokers } from './settings.mjs';

// A benchmark measures the request path, not admission control: the per-tenant token bucket
// (default 50/s), the byte budget and the agent backlog cap (10,000 commands) would answer much of
// the load with 429/503. The load generator drains the backlog between scenarios instead.
const benchAdmission = {
  DISPATCHER_TENANT_RATE_PER_S: '1000000',
  DISPATCHER_TENANT_BURST: '1000000',
  DISPATCHER_TENANT_BYTES_PER_S: '0',
  DISPATCHER_MAX_AGENT_BACKLOG: '100000000',
};
const config = { ...loadDispatcherConfig({ ...process.env, ...benchAdmission }), DISPATCHER_PORT: 0 };
// No directory in this bench: it stands in for it, as the owner of the cards and heartbeats topics.
const definitions = topicDefinitions(config);
await ensureTopics(createKafka({ brokers: config.KAFKA_BROKERS, clientId: 'bench-topics' }), [
  definitions.cards(),
  definitions.heartbeats(),
]);
const dispatcher = await startDispatcher(config, { auth: loadAuthOptions({ AUTH_API_KEYS: DEMO_API_KEYS }) });

const topics = new TopicNames(process.env.TOPIC_PREFIX);
const kafka = createKafka({ brokers: kafkaBrokers(), clientId: 'bench-agents' });
const producer = kafka.producer();
await producer.connect();
const record = {
  id: echoAgent.id,
  tenant: 'acme',
  visibility: 'public',
  version: 1,
  card: {
    ...echoAgent.card,
    supportedInterfaces: [{ url: 'http://worker.invalid/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
  },
  // Keyed by context too, so one tenant's tasks spread over the 4 partitions and 2 or 4 workers share them.
  channel: { keyTemplate: '{tenant}:{agent_id}:{context_id}', partitions: echoAgent.channel.partitions },
  retired: false,
  updatedAt: new Date().toISOString(),
};
await producer.send({ topic: topics.cards(), messages: [{ key: record.id, value: JSON.stringify(record) }] });
await producer.disconnect();

console.log(JSON.stringify({ dispatcher: dispatcher.url }));
process.on('SIGTERM', async () => {
  await dispatcher.stop().catch(() => undefined);
  process.exit(0);
});
