// `mesh` and `mesh console` find the ops token and the rest in the local env file `npm start` writes
// (.mesh/local.env; MESH_LOCAL_ENV here) when no flag or variable gives them; a flag or variable still wins.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitCode, writeLocalEnv } from '@mesh/app-cli';
import { eventually, freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { startTestAgents } from '../support/agents-runtime.js';
import { KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { repoRoot, spawnNode } from '../support/processes.js';

const OPS_TOKEN = 'local-env-ops-token';
const prefix = uniquePrefix('cli-local-env');
const agents = await startTestAgents(prefix, await freshDatabase('cli-local-env'), {
  AGENTS_RUN: 'echo-agent',
  AGENTS_OPS_TOKEN: OPS_TOKEN,
});
const { dir } = await startTestDirectory('cli-local-env-dir');
const scratch = mkdtempSync(join(tmpdir(), 'mesh-cli-local-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const file = join(scratch, '.mesh', 'local.env');
const local = { MESH_OPS_TOKEN: OPS_TOKEN, MESH_TOKEN: KEYS.acme, MESH_AGENTS_URL: agents.url, MESH_DIRECTORY_URL: dir.url };

// The bin as an operator runs it: none of the variables the file supplies is set.
const bare = Object.fromEntries(Object.entries(process.env).filter(([k]) => !(k in local)));
const bin = join(repoRoot, 'apps/cli/dist/main.js');
const mesh = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(process.execPath, [bin, ...args], { env: { ...bare, MESH_LOCAL_ENV: file, ...env } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
    ),
  );

test('without the file, mesh has no tokens; with it, the ops and caller tokens and the URLs come from it', async () => {
  const none = await mesh(['--agents-url', agents.url, 'unknowns', 'list']);
  assert.equal(none.code, ExitCode.failed);
  assert.match(
    none.stderr,
    /\(no ops token given: pass --ops-token or set MESH_OPS_TOKEN; npm start writes its own to \.mesh\/local\.env, which mesh reads\)$/m,
  );

  writeLocalEnv(file, local);
  const unknowns = await mesh(['--json', 'unknowns', 'list']);
  assert.equal(unknowns.code, ExitCode.ok, unknowns.stderr);
  assert.deepEqual(JSON.parse(unknowns.stdout), { unknowns: [] });
  const listed = await mesh(['--json', 'agents', 'list']);
  assert.equal(listed.code, ExitCode.ok, `the directory took the file's caller token: ${listed.stderr}`);
});

test('a flag or a variable wins over the file; a refused token from the file is named as such', async () => {
  writeLocalEnv(file, local);
  const flag = await mesh(['--ops-token', 'not-the-token', 'unknowns', 'list']);
  assert.equal(flag.code, ExitCode.failed);
  assert.match(flag.stderr, /\(the ops token given was refused: check --ops-token or MESH_OPS_TOKEN;/);
  const variable = await mesh(['unknowns', 'list'], { MESH_OPS_TOKEN: 'not-the-token' });
  assert.equal(variable.code, ExitCode.failed);
  assert.match(variable.stderr, /\(the ops token given was refused/);

  writeLocalEnv(file, { ...local, MESH_OPS_TOKEN: 'from-an-older-platform' });
  const stale = await mesh(['unknowns', 'list']);
  assert.equal(stale.code, ExitCode.failed);
  assert.ok(stale.stderr.includes(`(the ops token given (from ${file}) was refused`), stale.stderr);
});

// npm start writes the broker's admin principal with the broker; the run's own is not in the operator's shell.
test("Kafka commands connect as the file's principal; a refused one is named with the broker", async (t) => {
  if (!process.env.KAFKA_USERNAME) return t.skip('the broker of this run does not authenticate');
  const kafkaLocal = {
    ...local,
    KAFKA_BROKERS: testRun().brokers.join(','),
    TOPIC_PREFIX: prefix,
    KAFKA_SASL_MECHANISM: process.env.KAFKA_SASL_MECHANISM ?? 'scram-sha-512',
    KAFKA_USERNAME: process.env.KAFKA_USERNAME,
    KAFKA_PASSWORD: process.env.KAFKA_PASSWORD!,
  };
  const shell = {
    KAFKA_BROKERS: undefined,
    TOPIC_PREFIX: undefined,
    KAFKA_USERNAME: undefined,
    KAFKA_PASSWORD: undefined,
    KAFKA_SASL_MECHANISM: undefined,
  };
  writeLocalEnv(file, kafkaLocal);
  const lag = await mesh(['--json', 'lag', 'echo-agent'], shell);
  assert.equal(lag.code, ExitCode.ok, lag.stderr);
  assert.equal((JSON.parse(lag.stdout) as { agents: Array<{ agentId: string }> }).agents[0]?.agentId, 'echo-agent');

  writeLocalEnv(file, { ...kafkaLocal, KAFKA_PASSWORD: 'not-the-password' });
  const refused = await mesh(['lag', 'echo-agent'], shell);
  assert.equal(refused.code, ExitCode.failed, refused.stderr);
  assert.ok(
    refused.stderr.includes(
      `Kafka at ${kafkaLocal.KAFKA_BROKERS} refused principal ${kafkaLocal.KAFKA_USERNAME}: authentication failed (check KAFKA_USERNAME/KAFKA_PASSWORD)`,
    ),
    refused.stderr,
  );
});

test('a file other users may read is refused with the fix, not used', async () => {
  writeLocalEnv(file, local);
  chmodSync(file, 0o644);
  const open = await mesh(['unknowns', 'list']);
  assert.equal(open.code, ExitCode.failed);
  assert.match(open.stderr, /^mesh: .*local\.env is open to other users \(mode 644\): it holds the ops token; run `chmod 600 /);
});

test('mesh console started with no token options reads the file: it holds the ops token', async () => {
  writeLocalEnv(file, local);
  const proc = spawnNode(bin, { ...bare, MESH_LOCAL_ENV: file }, ['console', '--port', '0', '--sample-interval', '500']);
  const url = await eventually('the console listens', async () => /operator console on (\S+)/.exec(proc.stderr())?.[1], 20000);
  const overview = (await (await fetch(`${url}api/overview`)).json()) as { ops: boolean; problems: string[]; agents: unknown[] };
  assert.equal(overview.ops, true, JSON.stringify(overview.problems));
  assert.ok(!overview.problems.some((p) => /directory/.test(p)), `the directory took the file's token: ${overview.problems.join('; ')}`);
  proc.child.kill('SIGTERM');
  await proc.exited;
});
