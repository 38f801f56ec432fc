import { test } from 'node:test';
import assert from 'node:assert/strict';
import kafkajs, { logLevel, type LogEntry } from 'kafkajs';
import { createLogger } from '@mesh/telemetry';
import { kafkaLogCreator, kafkaStartError, saslFromEnv } from './kafka-client.js';

/** Feeds kafkajs-shaped entries through the log creator; returns the JSON lines written. */
function logThrough(level: string, entries: Array<Omit<LogEntry, 'label'>>): Array<Record<string, unknown>> {
  const raw: string[] = [];
  const logger = createLogger('dispatcher', level, { write: (line: string) => void raw.push(line) });
  const log = kafkaLogCreator(logger)(logLevel.DEBUG);
  for (const e of entries) log({ ...e, label: logLevel[e.level] } as LogEntry);
  for (const line of raw) assert.equal(line.trimEnd().split('\n').length, 1, 'one line per entry');
  return raw.map((l) => JSON.parse(l) as Record<string, unknown>);
}

const timestamp = new Date().toISOString();
/** What kafkajs logs at start while the broker, the group coordinator or a new topic come up. */
const startup: Array<Omit<LogEntry, 'label'>> = [
  {
    namespace: 'Consumer',
    level: logLevel.ERROR,
    log: {
      timestamp,
      logger: 'kafkajs',
      message: "Crash: KafkaJSProtocolError: The coordinator is loading and hence can't process requests",
      groupId: 'g',
      retryCount: 0,
      stack: 'KafkaJSProtocolError: The coordinator is loading\n    at createErrorFromCode (…)',
    },
  },
  {
    namespace: 'Consumer',
    level: logLevel.ERROR,
    log: { timestamp, logger: 'kafkajs', message: 'Restarting the consumer in 300ms', retryCount: 0, retryTime: 300, groupId: 'g' },
  },
  {
    namespace: 'Connection',
    level: logLevel.ERROR,
    log: {
      timestamp,
      logger: 'kafkajs',
      message: 'Response Metadata(key: 3, version: 6)',
      error: 'This server does not host this topic-partition',
    },
  },
  {
    namespace: 'Connection',
    level: logLevel.ERROR,
    log: {
      timestamp,
      logger: 'kafkajs',
      message: 'Response JoinGroup(key: 11, version: 5)',
      error: 'The group is rebalancing, so a rejoin is needed',
    },
  },
  {
    namespace: 'Admin',
    level: logLevel.ERROR,
    log: {
      timestamp,
      logger: 'kafkajs',
      message: 'Crash: KafkaJSProtocolError: There is no leader for this topic-partition as we are in the middle of a leadership election',
    },
  },
];

test("kafkajs's start-up retriable errors are never logged at error: debug, without their stack", () => {
  assert.deepEqual(logThrough('warn', startup), [], 'nothing at the default level');
  const lines = logThrough('debug', startup);
  assert.equal(lines.length, startup.length);
  for (const line of lines) {
    assert.equal(line.level, 'debug');
    assert.equal(line.src, 'kafkajs');
    assert.equal(line.service, 'dispatcher');
    assert.equal(line.stack, undefined);
  }
});

test('other kafkajs errors stay errors, in the service logger, with their stack as a field', () => {
  const lines = logThrough('warn', [
    {
      namespace: 'Consumer',
      level: logLevel.ERROR,
      log: {
        timestamp,
        logger: 'kafkajs',
        message: 'Crash: KafkaJSNonRetriableError: Topic authorization failed',
        stack: 'KafkaJSNonRetriableError\n    at x',
      },
    },
    {
      namespace: 'Producer',
      level: logLevel.WARN,
      log: { timestamp, logger: 'kafkajs', message: 'Limiting retries for the idempotent producer' },
    },
    { namespace: 'Consumer', level: logLevel.INFO, log: { timestamp, logger: 'kafkajs', message: 'Starting' } },
  ]);
  assert.deepEqual(
    lines.map((l) => [l.level, l.msg]),
    [
      ['error', 'Crash: KafkaJSNonRetriableError: Topic authorization failed'],
      ['warn', 'Limiting retries for the idempotent producer'],
    ],
  );
  assert.equal(lines[0].service, 'dispatcher');
  assert.match(String(lines[0].stack), /KafkaJSNonRetriableError/);
  assert.equal(lines[0].namespace, 'Consumer');
});

// kafkajs's own error classes, as a failed connection throws them (its types omit their constructors' arguments).
const { KafkaJSConnectionClosedError, KafkaJSProtocolError, KafkaJSSASLAuthenticationError } = kafkajs as unknown as {
  KafkaJSSASLAuthenticationError: new (message: string) => Error;
  KafkaJSConnectionClosedError: new (message: string) => Error;
  KafkaJSProtocolError: new (e: { message: string; type: string; code: number }) => Error;
};

test('a refused principal is one line naming the broker, the principal and the settings to check', () => {
  const sasl = { mechanism: 'scram-sha-512' as const, username: 'mesh-dispatcher', password: 'wrong' };
  const refused = kafkaStartError(
    ['127.0.0.1:9092'],
    sasl,
    new KafkaJSSASLAuthenticationError('SASL SCRAM SHA512 authentication failed: invalid credentials'),
  );
  assert.equal(refused.code, 'UNAUTHENTICATED');
  assert.equal(
    refused.message,
    'Kafka at 127.0.0.1:9092 refused principal mesh-dispatcher: authentication failed (check KAFKA_USERNAME/KAFKA_PASSWORD)',
  );
  assert.doesNotMatch(refused.message, /wrong/, 'never the password');
  const mechanism = kafkaStartError(
    ['b:1'],
    sasl,
    new KafkaJSProtocolError({ message: 'unsupported', type: 'UNSUPPORTED_SASL_MECHANISM', code: 33 }),
  );
  assert.match(
    mechanism.message,
    /^Kafka at b:1 refused principal mesh-dispatcher: the broker does not offer SCRAM-SHA-512 \(check KAFKA_SASL_MECHANISM\)$/,
  );
});

test('a closed connection without a principal hints at authentication; an unreachable broker stays retryable', () => {
  const closed = kafkaStartError(['b:1'], undefined, new KafkaJSConnectionClosedError('Closed connection'));
  assert.equal(closed.code, 'UNAVAILABLE');
  assert.match(
    closed.message,
    /^cannot reach Kafka at b:1: Closed connection \(the broker may require authentication: set KAFKA_USERNAME\/KAFKA_PASSWORD\)$/,
  );
  const down = kafkaStartError(['b:1'], undefined, new Error('connect ECONNREFUSED'));
  assert.equal(down.message, 'cannot reach Kafka at b:1: connect ECONNREFUSED');
  assert.equal(down.retryable, true);
});

test('the environment supplies a principal only when both username and password are set', () => {
  assert.equal(saslFromEnv({ KAFKA_USERNAME: 'u' }), undefined);
  assert.equal(saslFromEnv({}), undefined);
  assert.deepEqual(saslFromEnv({ KAFKA_USERNAME: 'u', KAFKA_PASSWORD: 'p' }), { mechanism: 'scram-sha-512', username: 'u', password: 'p' });
  assert.deepEqual(saslFromEnv({ KAFKA_USERNAME: 'u', KAFKA_PASSWORD: 'p', KAFKA_SASL_MECHANISM: 'plain' })?.mechanism, 'plain');
});
