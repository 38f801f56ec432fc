// docker-compose.yml cannot run here (no Docker engine), so this checks it against the code:
// service names, the pinned Kafka version, ports, and that every env key is one the app reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { directoryConfigSpec } from '@mesh/app-directory';
import { dispatcherConfigSpec } from '@mesh/app-dispatcher';
import { agentsConfigSpec } from '@mesh/app-agents';
import { repoRoot } from '../support/processes.js';

interface ComposeService {
  image?: string;
  build?: string;
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
}

const compose = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const apps = {
  directory: { spec: directoryConfigSpec, portVar: 'DIRECTORY_PORT', port: 8081 },
  dispatcher: { spec: dispatcherConfigSpec, portVar: 'DISPATCHER_PORT', port: 8080 },
  agents: { spec: agentsConfigSpec, portVar: 'AGENTS_PORT', port: 8082 },
};

test('compose has Kafka at the pinned version, Postgres and the three apps', () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ['agents', 'directory', 'dispatcher', 'kafka', 'postgres']);
  const pom = readFileSync(join(repoRoot, 'scripts/kafka/pom.xml'), 'utf8');
  const version = /<kafka.version>(.+)<\/kafka.version>/.exec(pom)?.[1];
  assert.equal(compose.services.kafka.image, `apache/kafka:${version}`);
  assert.ok(compose.services.kafka.ports?.includes('9092:9092'));
  assert.ok(compose.services.postgres.ports?.includes('5432:5432'));
});

test('each app service runs its entry point on its port with env keys the app reads', () => {
  for (const [name, app] of Object.entries(apps)) {
    const svc = compose.services[name];
    assert.deepEqual(svc.command, ['node', `apps/${name}/dist/main.js`]);
    assert.ok(svc.ports?.includes(`${app.port}:${app.port}`), `${name} publishes ${app.port}`);
    const env = svc.environment ?? {};
    assert.equal(env[app.portVar], String(app.port));
    const known = new Set(Object.keys(app.spec));
    for (const key of Object.keys(env)) assert.ok(known.has(key), `${name}: compose sets ${key}, which the app does not read`);
    for (const key of ['KAFKA_BROKERS', 'DATABASE_URL']) assert.ok(env[key], `${name}: compose sets ${key}`);
    // The apps bind 127.0.0.1 by default; a container's published port needs them on every interface.
    assert.equal(env.HTTP_HOST, '0.0.0.0', `${name}: compose sets HTTP_HOST`);
    // The default port in the app's config matches the compose port.
    assert.equal((app.spec as Record<string, { parse(v: unknown): unknown }>)[app.portVar].parse(undefined), app.port);
  }
});
