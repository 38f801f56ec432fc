import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MeshError } from '@mesh/contract';
import { loadConfig } from './config-loader.js';
import { kafkaCredentials, kafkaSpec } from './areas.js';

const kafka = (env: NodeJS.ProcessEnv) => loadConfig(kafkaSpec, env);

test('no principal configured: no SASL, no TLS (a broker without authentication)', () => {
  assert.deepEqual(kafkaCredentials(kafka({})), {});
});

test('a principal becomes SCRAM-SHA-512 SASL unless another mechanism is named; KAFKA_SSL adds TLS', () => {
  assert.deepEqual(kafkaCredentials(kafka({ KAFKA_USERNAME: 'mesh-dispatcher', KAFKA_PASSWORD: 's3cret' })), {
    sasl: { mechanism: 'scram-sha-512', username: 'mesh-dispatcher', password: 's3cret' },
  });
  assert.deepEqual(
    kafkaCredentials(kafka({ KAFKA_USERNAME: 'u', KAFKA_PASSWORD: 'p', KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SSL: 'true' })),
    { sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'p' }, ssl: true },
  );
  assert.deepEqual(kafkaCredentials(kafka({ KAFKA_SSL: 'true' })), { ssl: true });
});

test('a username without a password (or the reverse) is refused, naming both settings', () => {
  for (const env of [{ KAFKA_USERNAME: 'mesh-agents' }, { KAFKA_PASSWORD: 'p' }]) {
    assert.throws(
      () => kafkaCredentials(kafka(env)),
      (err: unknown) =>
        err instanceof MeshError && err.code === 'CONFIG_INVALID' && /KAFKA_USERNAME and KAFKA_PASSWORD go together/.test(err.message),
    );
  }
});

test('an unknown mechanism or KAFKA_SSL value is refused by the loader', () => {
  assert.throws(() => kafka({ KAFKA_SASL_MECHANISM: 'gssapi' }), /KAFKA_SASL_MECHANISM/);
  assert.throws(() => kafka({ KAFKA_SSL: 'yes' }), /KAFKA_SSL/);
});
