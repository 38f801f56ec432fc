import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { loadConfig, port } from './config-loader.js';
import { databaseSpec, kafkaSpec } from './areas.js';

test('defaults apply when variables are unset', () => {
  const c = loadConfig({ ...kafkaSpec, ...databaseSpec, PORT: port(8080) }, {});
  assert.deepEqual(c.KAFKA_BROKERS, ['127.0.0.1:9092']);
  assert.equal(c.DATABASE_URL, 'postgres://postgres@127.0.0.1:5432/agent_mesh');
  assert.equal(c.PORT, 8080);
});

test('a bad value names the variable', () => {
  assert.throws(() => loadConfig(kafkaSpec, { KAFKA_BROKERS: 'nonsense' }), /KAFKA_BROKERS="nonsense".*not host:port/);
  assert.throws(() => loadConfig(databaseSpec, { DATABASE_URL: 'mysql://x/y' }), /DATABASE_URL.*postgres:\/\//);
  assert.throws(() => loadConfig({ PORT: port(1) }, { PORT: '70000' }), /PORT="70000"/);
  assert.deepEqual(loadConfig(kafkaSpec, { KAFKA_BROKERS: 'a:1, b:2' }).KAFKA_BROKERS, ['a:1', 'b:2']);
});

test('a bad secret is named, its value never shown', () => {
  const secret = { AGENTS_EVENT_KEY: z.string().regex(/^\{/, 'expected JSON'), OPS_TOKEN: z.string().min(16) };
  assert.throws(
    () => loadConfig(secret, { AGENTS_EVENT_KEY: 'private-bits', OPS_TOKEN: 'short-bits' }),
    (err: Error) =>
      /AGENTS_EVENT_KEY=<hidden>: expected JSON/.test(err.message) && /OPS_TOKEN=<hidden>/.test(err.message) && !/bits/.test(err.message),
  );
});
