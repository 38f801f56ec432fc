import { test } from 'node:test';
import assert from 'node:assert/strict';
import { logLevel, type LogEntry } from 'kafkajs';
import { createLogger } from '@mesh/telemetry';
import { kafkaLogCreator } from './kafka-client.js';

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
