import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localEnvPath, localSecrets, readLocalEnv, writeLocalEnv } from './local-env.js';

const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-local-env-'));
  return { dir, path: join(dir, '.mesh', 'local.env'), done: () => rmSync(dir, { recursive: true, force: true }) };
};

test('written with mode 0600 in a 0700 directory, read back as written, also values a shell needs quoted', () => {
  const { dir, path, done } = scratch();
  try {
    const mcp = JSON.stringify({ billing: { url: 'http://127.0.0.1:8083/mcp' } });
    writeLocalEnv(path, { MESH_OPS_TOKEN: 'abc_-123', AGENTS_MCP_SERVERS: mcp, TOPIC_PREFIX: '' }, ['a header line']);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, '.mesh')).mode & 0o777, 0o700);
    assert.match(readFileSync(path, 'utf8'), /^# a header line\n/);
    assert.deepEqual(readLocalEnv(path), { MESH_OPS_TOKEN: 'abc_-123', AGENTS_MCP_SERVERS: mcp, TOPIC_PREFIX: '' });
    // Rewritten whole: a file someone loosened is replaced by a 0600 one.
    chmodSync(path, 0o644);
    writeLocalEnv(path, { MESH_OPS_TOKEN: 'x' });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.throws(() => writeLocalEnv(path, { 'not-a-name': 'x' }), /not-a-name: not a variable name/);
    assert.throws(() => writeLocalEnv(path, { A: "it's" }), /A: a value with a single quote/);
  } finally {
    done();
  }
});

test('a missing file reads as none; a file other users may read is refused, naming the fix', () => {
  const { path, done } = scratch();
  try {
    assert.equal(readLocalEnv(path), undefined);
    writeLocalEnv(path, { MESH_OPS_TOKEN: 'x' });
    chmodSync(path, 0o640);
    assert.throws(() => readLocalEnv(path), new RegExp(`open to other users \\(mode 640\\).*chmod 600 ${path}`));
  } finally {
    done();
  }
});

test('secrets: the environment wins, else the file keeps them, else they are generated once', () => {
  const first = localSecrets(undefined, {});
  assert.match(first.AGENTS_OPS_TOKEN, /^[\w-]{32}$/);
  assert.deepEqual(localSecrets(first, {}), first, 'a restart keeps them');
  assert.deepEqual(localSecrets(first, { AGENTS_OPS_TOKEN: 'given' }), { ...first, AGENTS_OPS_TOKEN: 'given' });
  assert.notDeepEqual(localSecrets(undefined, {}), first, 'a new checkout gets its own');
});

test('the path: MESH_LOCAL_ENV, else .mesh/local.env at the root of the checkout', () => {
  assert.equal(localEnvPath({ MESH_LOCAL_ENV: '/somewhere/else.env' }), '/somewhere/else.env');
  const path = localEnvPath({});
  assert.match(path, /\/\.mesh\/local\.env$/);
  assert.ok(statSync(join(path, '..', '..', 'package.json')).isFile(), 'beside the root package.json');
});
