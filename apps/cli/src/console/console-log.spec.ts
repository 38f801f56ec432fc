import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '@mesh/telemetry';
import { consoleKafkaLog } from './console-log.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('mesh-console', 'debug', sink) };
}

const entry = (level: number, message: string, error?: string) => ({
  namespace: 'Connection',
  level,
  log: { message, ...(error ? { error } : {}) },
});

test('kafkajs errors are logged at WARN, each cause once', async () => {
  const { lines, logger } = capture();
  const log = consoleKafkaLog(logger)();
  for (let i = 0; i < 50; i++) log(entry(1, 'Response Metadata', 'This server does not host this topic-partition'));
  log(entry(1, 'Response Metadata', 'another cause'));
  log(entry(2, 'a warning'));
  log(entry(4, 'info is dropped'));
  log(entry(5, 'debug is dropped'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => [l.level, l.src, l.msg, l.error ?? null]),
    [
      ['warn', 'kafkajs', 'Response Metadata', 'This server does not host this topic-partition'],
      ['warn', 'kafkajs', 'Response Metadata', 'another cause'],
      ['warn', 'kafkajs', 'a warning', null],
    ],
  );
});

test('the set of causes seen stays bounded', async () => {
  const { lines, logger } = capture();
  const log = consoleKafkaLog(logger, 2)();
  for (const m of ['a', 'b', 'c', 'a']) log(entry(1, m));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    lines.map((l) => l.msg),
    ['a', 'b', 'c', 'a'],
  );
});
