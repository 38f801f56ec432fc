// docker-compose.yml cannot run here (no Docker engine), so this checks it (and the Dockerfile's
// default command) against the code: each app service runs a built entry point on the port its
// config defaults to, sets only variables the app reads (its config spec, libs/auth, the
// OpenTelemetry variables of @mesh/telemetry), has a healthcheck on its /healthz, and the services
// point at each other by names and ports that exist: the agents at the directory and the tool
// server with the tool server's secret, every app at the collector's OTLP receiver, the collector
// at Jaeger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { directoryConfigSpec } from '@mesh/app-directory';
import { dispatcherConfigSpec } from '@mesh/app-dispatcher';
import { agentsConfigSpec } from '@mesh/agent-runtime';
import { billingToolsConfigSpec } from '@mesh/app-billing-tools';
import { authSpec, DEMO_API_KEYS } from '@mesh/auth';
import { repoRoot } from '../support/processes.js';

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
  configs?: { source: string; target: string }[];
}

const raw = readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8');
const compose = parse(raw, { merge: true }) as { services: Record<string, ComposeService>; configs: Record<string, { content: string }> };
const services = compose.services;

/** `${NAME:-default}` as compose interpolates it without NAME set. */
const interpolate = (v: string) => v.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
const envOf = (name: string) =>
  Object.fromEntries(Object.entries(services[name].environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));

const apps = {
  directory: { spec: { ...directoryConfigSpec, ...authSpec }, portVar: 'DIRECTORY_PORT', port: 8081 },
  dispatcher: { spec: { ...dispatcherConfigSpec, ...authSpec }, portVar: 'DISPATCHER_PORT', port: 8080 },
  agents: { spec: { ...agentsConfigSpec, ...authSpec }, portVar: 'AGENTS_PORT', port: 8082 },
  'billing-tools': { spec: billingToolsConfigSpec, portVar: 'BILLING_TOOLS_PORT', port: 8083 },
};
/** The Node flags npm start gives the dispatcher and the agents (the other apps run with none). */
const flags = (await import(pathToFileURL(join(repoRoot, 'scripts/node-flags.mjs')).href)) as Record<string, string[]>;

/** Read by @mesh/telemetry (tracing export, log level), not by an app's config spec. */
const telemetryVars = new Set(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'LOG_LEVEL']);

test('compose runs Kafka at the pinned version, Postgres, the four apps from one image, the collector and Jaeger', () => {
  assert.deepEqual(Object.keys(services).sort(), [
    'agents',
    'billing-tools',
    'directory',
    'dispatcher',
    'jaeger',
    'kafka',
    'otel-collector',
    'postgres',
  ]);
  const pom = readFileSync(join(repoRoot, 'scripts/kafka/pom.xml'), 'utf8');
  assert.equal(services.kafka.image, `apache/kafka:${/<kafka.version>(.+)<\/kafka.version>/.exec(pom)?.[1]}`);
  assert.ok(services.kafka.ports?.includes('9092:9092'));
  assert.ok(services.postgres.ports?.includes('5432:5432'));
  const appNames = Object.keys(apps);
  assert.equal(new Set(appNames.map((n) => services[n].image)).size, 1, 'one image for every app');
  assert.deepEqual(
    appNames.filter((n) => services[n].build),
    ['directory'],
    'the image is built once',
  );
});

test('each app runs a built entry point on its default port, reads every variable it is given, and has a healthcheck', async () => {
  const nodeFlags: Record<string, string[]> = { dispatcher: flags.dispatcherNodeFlags, agents: flags.agentsNodeFlags };
  for (const [name, app] of Object.entries(apps)) {
    const svc = services[name];
    const [node, ...rest] = svc.command ?? [];
    const entry = rest.at(-1) ?? '';
    assert.equal(node, 'node');
    assert.deepEqual(rest.slice(0, -1), nodeFlags[name] ?? [], `${name}: the Node flags of scripts/node-flags.mjs`);
    assert.ok(existsSync(join(repoRoot, entry)), `${name}: ${entry} exists after npm run build`);
    assert.ok(svc.ports?.includes(`${app.port}:${app.port}`), `${name} publishes ${app.port}`);
    assert.equal(
      (app.spec as Record<string, { parse(v: unknown): unknown }>)[app.portVar].parse(undefined),
      app.port,
      `${name}: compose port is the default`,
    );
    const env = envOf(name);
    assert.equal(env[app.portVar], String(app.port));
    assert.equal(env.HTTP_HOST, '0.0.0.0', `${name}: listens where the published port reaches it`);
    assert.ok(env.DATABASE_URL, `${name}: DATABASE_URL`);
    const known = new Set(Object.keys(app.spec));
    for (const key of Object.keys(env))
      assert.ok(known.has(key) || telemetryVars.has(key), `${name}: compose sets ${key}, which nothing reads`);
    for (const [key, value] of Object.entries(env)) {
      const spec = (app.spec as Record<string, { safeParse(v: unknown): { success: boolean } }>)[key];
      if (spec) assert.ok(spec.safeParse(value).success, `${name}: ${key}=${value} is a value the app accepts`);
    }
    const check = svc.healthcheck?.test.join(' ') ?? '';
    assert.match(check, new RegExp(`http://127\\.0\\.0\\.1:${app.port}/healthz`), `${name}: healthcheck on /healthz`);
  }
});

test("the image's default command is the dispatcher's, with its Node flags", async () => {
  const cmd = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('CMD '));
  assert.equal(cmd.length, 1, 'one CMD');
  assert.deepEqual(JSON.parse(cmd[0].slice(4)), ['node', ...flags.dispatcherNodeFlags, services.dispatcher.command?.at(-1)]);
});

test('services reach each other by existing names and ports, with matching secrets', () => {
  const agents = envOf('agents');
  const billing = envOf('billing-tools');
  assert.equal(agents.AGENTS_DIRECTORY_URL, 'http://directory:8081');
  // The registration token is a key the directory accepts (its DEMO keys unless AUTH_API_KEYS is set).
  const directoryKeys = (envOf('directory').AUTH_API_KEYS ?? DEMO_API_KEYS).split(',').map((k) => k.split('=')[0]);
  assert.ok(directoryKeys.includes(agents.AGENTS_DIRECTORY_TOKEN), 'the agents register with a key the directory accepts');
  const mcp = JSON.parse(agents.AGENTS_MCP_SERVERS) as Record<string, { url: string }>;
  assert.equal(mcp.billing.url, `http://billing-tools:${billing.BILLING_TOOLS_PORT}/mcp`);
  // Tool tokens: the agents exchange grants at the dispatcher; billing-tools trusts its JWKS and issuer.
  const dispatcher = envOf('dispatcher');
  assert.equal(agents.AGENTS_TOOL_TOKEN_SECRET, undefined, 'the workers hold no tool-token secret');
  assert.equal(agents.AGENTS_TOKEN_URL, `http://dispatcher:${dispatcher.DISPATCHER_PORT}/oauth/token`);
  assert.equal(billing.BILLING_TOOLS_JWKS_URL, `http://dispatcher:${dispatcher.DISPATCHER_PORT}/.well-known/jwks.json`);
  assert.equal(billing.BILLING_TOOLS_TOKEN_ISSUER, dispatcher.DISPATCHER_ISSUER ?? dispatcher.DISPATCHER_PUBLIC_URL);
  assert.ok(agents.AGENTS_OPS_TOKEN.length >= 8);
  assert.equal(envOf('dispatcher').DISPATCHER_PUBLIC_URL, 'http://localhost:8080');
  // Start order: the agents register in the directory and need their tool server; the dispatcher serves their cards.
  const deps = (name: string) => Object.keys(services[name].depends_on ?? {});
  assert.ok(deps('agents').includes('directory') && deps('agents').includes('billing-tools'));
  assert.ok(deps('dispatcher').includes('agents'));
  // Traces: every app → the collector's OTLP/HTTP receiver → Jaeger's OTLP/gRPC port.
  const collector = parse(compose.configs['otel-collector'].content) as {
    receivers: { otlp: { protocols: { http: { endpoint: string } } } };
    exporters: Record<string, { endpoint: string }>;
    service: { pipelines: { traces: { receivers: string[]; exporters: string[] } } };
  };
  const receiverPort = collector.receivers.otlp.protocols.http.endpoint.split(':')[1];
  for (const name of Object.keys(apps))
    assert.equal(envOf(name).OTEL_EXPORTER_OTLP_ENDPOINT, `http://otel-collector:${receiverPort}`, name);
  assert.deepEqual(collector.service.pipelines.traces.receivers, ['otlp']);
  const exporter = collector.exporters[collector.service.pipelines.traces.exporters[0]];
  assert.equal(exporter.endpoint, 'jaeger:4317');
  assert.equal(services['otel-collector'].configs?.[0].source, 'otel-collector');
  assert.ok(services.jaeger.ports?.includes('16686:16686'), 'the Jaeger UI is published');
});
