#!/usr/bin/env node
// Directory benchmark (npm run bench:directory; never part of npm test).
// 1. Registration throughput through HTTP with real Kafka (each registration creates a command topic),
//    on a small sample so the shared broker is not flooded with topics (they are deleted afterwards).
// 2. 10,000 cards registered through HTTP with the in-memory card stream (database path only), then
//    search latency p50/p99 over a mix of ranked text, skill, tag, mode and combined queries.
// Uses its own database (dropped at the end) and topic prefix. Prints a JSON summary and writes it
// to bench/results/directory-<date>.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { createKafka } from '@mesh/bus';
import { TopicNames } from '@mesh/contract';
import { dropDatabase, ensureDatabase } from '@mesh/database';
import { InMemoryCardStream, loadDirectoryConfig, startDirectory } from '@mesh/app-directory';
import { adminDatabaseUrl, integer, kafkaBrokers, kafkaFacts } from './settings.mjs';

const CARDS = integer('BENCH_CARDS', 10_000);
const KAFKA_SAMPLE = integer('BENCH_KAFKA_REGISTRATIONS', 200);
const SEARCHES = integer('BENCH_SEARCHES', 3_000);
const CONCURRENCY = integer('BENCH_CONCURRENCY', 8);
const run = Date.now().toString(36);
const brokers = kafkaBrokers();
const adminUrl = adminDatabaseUrl();

const tenants = ['acme', 'globex', 'initech', 'umbrella'];
const keys = tenants.map((t) => `bench-key-${t}=${t}:bench`).join(',');
const auth = (i) => ({ authorization: `Bearer bench-key-${tenants[i % tenants.length]}`, 'content-type': 'application/json' });

// Deterministic pseudo-random words so runs are comparable.
let seed = 42;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
const domains = [
  'invoice',
  'refund',
  'payment',
  'shipping',
  'inventory',
  'travel',
  'calendar',
  'contract',
  'support',
  'hiring',
  'tax',
  'fraud',
  'pricing',
  'translation',
  'research',
  'security',
  'compliance',
  'weather',
  'recipe',
  'insurance',
];
const verbs = [
  'analyse',
  'summarise',
  'approve',
  'reconcile',
  'forecast',
  'classify',
  'translate',
  'schedule',
  'draft',
  'audit',
  'monitor',
  'extract',
];
const nouns = [
  'documents',
  'orders',
  'tickets',
  'claims',
  'reports',
  'emails',
  'receipts',
  'records',
  'requests',
  'ledgers',
  'forms',
  'messages',
];
const modes = ['text/plain', 'application/json', 'application/pdf', 'image/png', 'audio/wav'];

function benchCard(i) {
  const d = pick(domains);
  const skills = Array.from({ length: 1 + (i % 3) }, (_, k) => {
    const v = pick(verbs);
    const n = pick(nouns);
    return {
      id: `${d}-${v}-${k}`,
      name: `${v} ${n}`,
      description: `Can ${v} ${n} about ${d} and ${pick(domains)} for enterprise teams`,
      tags: [d, v, pick(domains)],
      examples: [`please ${v} the ${n} of last week`],
      inputModes: [pick(modes)],
    };
  });
  return {
    name: `${d} ${pick(verbs)} agent ${i}`,
    description: `A ${d} agent that helps ${pick(nouns)} and ${pick(nouns)} with ${pick(domains)} knowledge`,
    version: '1.0.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: [pick(modes)],
    skills,
  };
}

async function post(url, i, body) {
  const res = await fetch(`${url}/v1/agents`, { method: 'POST', headers: auth(i), body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`registration ${i}: ${res.status} ${await res.text()}`);
}

async function registerMany(url, n, offset, partitions) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = offset + next++;
        await post(url, i, { card: benchCard(i), visibility: i % 5 === 0 ? 'public' : 'tenant', channel: { partitions } });
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  return { registrations: n, seconds: Number(s.toFixed(2)), perSecond: Number((n / s).toFixed(1)) };
}

const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function main() {
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/mesh_bench_directory_${run}`;
  await ensureDatabase(dbUrl.toString());
  const prefix = `bench${run}.`;
  const env = {
    KAFKA_BROKERS: brokers.join(','),
    DATABASE_URL: dbUrl.toString(),
    TOPIC_PREFIX: prefix,
    AUTH_API_KEYS: keys,
    DIRECTORY_REGISTRATIONS_PER_MINUTE: '1000000',
  };
  const kafkaDbUrl = new URL(adminUrl);
  kafkaDbUrl.pathname = `/mesh_bench_directory_${run}_k`;
  await ensureDatabase(kafkaDbUrl.toString());
  const result = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}`,
    kafka: kafkaFacts(),
    // Other processes share the machine; the 1-minute load average puts the tail latencies in context.
    loadAverageAtStart: Number(os.loadavg()[0].toFixed(2)),
  };
  try {
    // 1. With Kafka: every registration creates its command topic.
    const withKafka = await startDirectory({
      ...loadDirectoryConfig({ ...env, DATABASE_URL: kafkaDbUrl.toString(), TOPIC_PREFIX: `${prefix}k.` }),
      DIRECTORY_PORT: 0,
    });
    try {
      result.registrationWithKafka = await registerMany(withKafka.url, KAFKA_SAMPLE, 1_000_000, 1);
    } finally {
      await withKafka.stop();
    }

    // 2. The database path: 10,000 cards, then searches.
    const dir = await startDirectory({ ...loadDirectoryConfig(env), DIRECTORY_PORT: 0 }, { cardStream: new InMemoryCardStream() });
    try {
      result.registrationDatabaseOnly = await registerMany(dir.url, CARDS, 0, 3);
      const queries = [
        () => `q=${pick(domains)}`,
        () => `q=${pick(verbs)}%20${pick(nouns)}`,
        () => `skill=${pick(domains)}-${pick(verbs)}-0`,
        () => `tag=${pick(domains)}`,
        () => `q=${pick(domains)}&tag=${pick(verbs)}`,
        () => `inputMode=${encodeURIComponent(pick(modes))}&q=${pick(nouns)}`,
        () => `outputMode=${encodeURIComponent(pick(modes))}`,
      ];
      // Warm-up, then measure sequential round trips (client-side, includes HTTP and auth).
      for (let i = 0; i < 200; i++) await fetch(`${dir.url}/v1/agents?${pick(queries)()}`, { headers: auth(i) });
      // Steady state: what autovacuum does shortly after a bulk load (fresh statistics, visibility map).
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: dbUrl.toString() });
      await client.connect();
      await client.query('VACUUM ANALYZE directory.agent');
      await client.end();
      const lat = [];
      const server = [];
      let hits = 0;
      for (let i = 0; i < SEARCHES; i++) {
        const t0 = performance.now();
        const res = await fetch(`${dir.url}/v1/agents?${pick(queries)()}&limit=20`, { headers: auth(i) });
        const body = await res.json();
        lat.push(performance.now() - t0);
        server.push(Number(/dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? NaN));
        if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(body)}`);
        hits += body.items.length;
      }
      lat.sort((a, b) => a - b);
      server.sort((a, b) => a - b);
      // Baseline: the same loop against /livez (no auth, no database) shows what the machine adds.
      const base = [];
      for (let i = 0; i < 500; i++) {
        const t0 = performance.now();
        await (await fetch(`${dir.url}/livez`)).text();
        base.push(performance.now() - t0);
      }
      base.sort((a, b) => a - b);
      result.baselineLivez = { p50ms: Number(pct(base, 50).toFixed(2)), p99ms: Number(pct(base, 99).toFixed(2)) };
      result.search = {
        cards: CARDS,
        searches: SEARCHES,
        meanHits: Number((hits / SEARCHES).toFixed(1)),
        p50ms: Number(pct(lat, 50).toFixed(2)),
        p99ms: Number(pct(lat, 99).toFixed(2)),
        maxMs: Number(lat.at(-1).toFixed(2)),
        // Server-Timing: query time inside the directory (database round trip included), no HTTP.
        serverP50ms: Number(pct(server, 50).toFixed(2)),
        serverP99ms: Number(pct(server, 99).toFixed(2)),
      };
    } finally {
      await dir.stop();
    }
  } finally {
    await dropDatabase(dbUrl.toString()).catch(() => undefined);
    await dropDatabase(kafkaDbUrl.toString()).catch(() => undefined);
    // Every topic of this run (command topics, cards, heartbeats), so the shared broker keeps nothing.
    const admin = createKafka({ brokers, clientId: 'bench' }).admin();
    await admin.connect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(new TopicNames(prefix).prefix));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
    await admin.disconnect();
  }
  result.loadAverageAtEnd = Number(os.loadavg()[0].toFixed(2));
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL(`./results/directory-${result.date.slice(0, 10)}.json`, import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
