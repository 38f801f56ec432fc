import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLogger, consoleCaller, routeConsoleTo } from './logging.js';
import { startTelemetry, tracer } from './tracing.js';

/** A logger whose lines are kept (raw, as written) instead of printed. */
function capture(level = 'debug') {
  const raw: string[] = [];
  const logger = createLogger('test-service', level, { write: (line: string) => void raw.push(line) });
  const lines = () => raw.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { raw, lines, logger };
}

/**
 * A module at `node_modules/<pkg>/print.mjs` that prints with console like a library does:
 * the stack of its console call names the package, as the installed SDKs' do.
 */
async function fakeLibrary(pkg: string): Promise<{ print: (method: string, ...args: unknown[]) => void; remove: () => void }> {
  const root = mkdtempSync(join(tmpdir(), 'console-lib-'));
  const dir = join(root, 'node_modules', ...pkg.split('/'));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'print.mjs'), 'export function print(method, ...args) { console[method](...args); }\n');
  const mod = (await import(pathToFileURL(join(dir, 'print.mjs')).href)) as { print: (method: string, ...args: unknown[]) => void };
  return { print: mod.print, remove: () => rmSync(root, { recursive: true, force: true }) };
}

test("a library's console.error becomes one JSON line with service, level, time and src", async () => {
  const { raw, lines, logger } = capture();
  const lib = await fakeLibrary('@a2a-js/sdk');
  const restore = routeConsoleTo(logger);
  try {
    const err = new Error('stream broke');
    lib.print('error', 'Pre-stream error for request 7:', err);
  } finally {
    restore();
    lib.remove();
  }
  assert.equal(raw.length, 1, 'one line');
  assert.equal(raw[0].trimEnd().split('\n').length, 1, 'the stack is a field, not extra lines');
  const [line] = lines();
  assert.equal(line.service, 'test-service');
  assert.equal(line.level, 'error');
  assert.equal(line.src, 'a2a-sdk');
  assert.match(String(line.time), /^\d{4}-\d\d-\d\dT/);
  assert.equal(line.msg, 'Pre-stream error for request 7: Error: stream broke');
  assert.match(String((line.err as { stack?: string }).stack), /stream broke/);
});

test('a protocol refusal the SDK prints (JSON-RPC code, A2A reason) goes to debug; an internal error stays an error', async () => {
  const { lines, logger } = capture('debug');
  const lib = await fakeLibrary('@modelcontextprotocol/sdk');
  const restore = routeConsoleTo(logger);
  try {
    lib.print('error', 'Pre-stream error for request 1:', Object.assign(new Error('Task is in a terminal state'), { code: -32004 }));
    lib.print('error', 'failed:', Object.assign(new Error('internal'), { code: -32603 }));
    lib.print('error', 'Pre-stream error for request 2:', Object.assign(new Error('terminal'), { reason: 'UNSUPPORTED_OPERATION' }));
    lib.print('error', 'failed:', Object.assign(new Error('boom'), { reason: 'INTERNAL_ERROR' }));
  } finally {
    restore();
    lib.remove();
  }
  assert.deepEqual(
    lines().map((l) => [l.src, l.level]),
    [
      ['mcp-sdk', 'debug'],
      ['mcp-sdk', 'error'],
      ['mcp-sdk', 'debug'],
      ['mcp-sdk', 'error'],
    ],
  );
});

test('console output respects the level and the console comes back after restore', async () => {
  const { raw, logger } = capture('warn');
  const before = console.info;
  const restore = routeConsoleTo(logger);
  console.info('below the level');
  console.warn('a warning from the service itself');
  restore();
  assert.equal(console.info, before);
  assert.equal(raw.length, 1);
  const line = JSON.parse(raw[0]) as Record<string, unknown>;
  assert.equal(line.level, 'warn');
  assert.equal(line.src, 'console');
});

test('lines written while a span is active carry its trace and span ids', async () => {
  const telemetry = startTelemetry({ serviceName: 'logging-spec', env: {} });
  const { lines, logger } = capture('info');
  try {
    await tracer().startActiveSpan('work', async (span) => {
      logger.info('inside');
      span.end();
    });
    logger.info('outside');
  } finally {
    await telemetry.shutdown();
  }
  const [inside, outside] = lines();
  assert.match(String(inside.trace_id), /^[0-9a-f]{32}$/);
  assert.match(String(inside.span_id), /^[0-9a-f]{16}$/);
  assert.equal(outside.trace_id, undefined);
});

test('the caller of console is read from the stack', () => {
  const frame = (path: string) => `Error\n    at routed (/repo/libs/telemetry/dist/logging.js:1:1)\n    at fn (${path}:1:1)`;
  assert.equal(consoleCaller(frame('/repo/node_modules/@a2a-js/sdk/dist/server/express/index.js')), 'a2a-sdk');
  assert.equal(consoleCaller(frame('/repo/node_modules/pg/node_modules/pg-pool/index.js')), 'pg-pool');
  assert.equal(consoleCaller(frame('/repo/apps/dispatcher/dist/main.js')), 'console');
  assert.equal(consoleCaller(undefined), 'console');
});
