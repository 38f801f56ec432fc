#!/usr/bin/env node
// `npm run conformance`: the official A2A TCK (a2aproject/a2a-tck) against the mesh's `tck-agent`,
// served at the dispatcher's host root (DISPATCHER_ROOT_AGENT), on both bindings (JSON-RPC and
// HTTP+JSON): the mandatory category and the capability category (whose tests run for what the
// card declares and skip the rest). Prints pass/fail counts per category and binding.
//
// The TCK is not part of this repository and this script downloads nothing: check it out and give
// its path in A2A_TCK_DIR, with a Python that has its dependencies (A2A_TCK_PYTHON, default
// $A2A_TCK_DIR/.venv/bin/python, else python3). Without CONFORMANCE_URL the script starts the
// platform itself (scripts/start.mjs) on ports 18080-18083 (CONFORMANCE_PORT_BASE), with a
// database and topic prefix of its own, and stops it at the end; with CONFORMANCE_URL it uses a
// running one, which must serve tck-agent at its root (start it with DISPATCHER_ROOT_AGENT=tck-agent).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir, hostname, cpus } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const env = process.env;
const tckDir = env.A2A_TCK_DIR;
const token = env.CONFORMANCE_TOKEN ?? 'demo-acme';
const streamingTimeout = env.TCK_STREAMING_TIMEOUT ?? '2.0';

const HOW_TO_GET_THE_TCK = `
The A2A TCK is not bundled. Check it out and install its Python dependencies from your usual
package sources, then point A2A_TCK_DIR at it:

  git clone https://github.com/a2aproject/a2a-tck /path/to/a2a-tck
  python3 -m venv /path/to/a2a-tck/.venv
  /path/to/a2a-tck/.venv/bin/pip install pytest pytest-asyncio httpx requests responses deepdiff \\
      jsonschema packaging PyYAML python-dotenv grpcio grpcio-tools protobuf googleapis-common-protos \\
      proto-plus pyOpenSSL aiohttp
  A2A_TCK_DIR=/path/to/a2a-tck npm run conformance

(pytest-json-report, in the TCK's own requirements, is not needed: this script runs pytest itself.)`;

function fail(message) {
  console.error(`conformance: ${message}`);
  process.exit(2);
}

if (!tckDir) fail(`A2A_TCK_DIR is not set.\n${HOW_TO_GET_THE_TCK}`);
if (!existsSync(join(tckDir, 'tests/mandatory')) || !existsSync(join(tckDir, 'tests/optional/capabilities')))
  fail(`${tckDir} does not look like a checkout of a2aproject/a2a-tck (no tests/mandatory).\n${HOW_TO_GET_THE_TCK}`);
const venvPython = join(tckDir, '.venv/bin/python');
const python = env.A2A_TCK_PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');
const probe = spawnSync(python, ['-c', 'import pytest, pytest_asyncio, httpx, requests, grpc, dotenv, yaml, jsonschema'], {
  encoding: 'utf8',
});
if (probe.status !== 0)
  fail(
    `${python} lacks the TCK's dependencies (${(probe.stderr || String(probe.error)).trim().split('\n').at(-1)}).\n${HOW_TO_GET_THE_TCK}`,
  );

/** The categories run, as the TCK's run_tck.py selects them (path and markers). */
const CATEGORIES = [
  {
    name: 'mandatory',
    path: 'tests/mandatory/',
    markers: (b) => `mandatory or mandatory_protocol${b === 'jsonrpc' ? ' or mandatory_jsonrpc' : ''}`,
  },
  { name: 'capabilities', path: 'tests/optional/capabilities/', markers: () => undefined },
];
const BINDINGS = [
  { name: 'jsonrpc', label: 'JSON-RPC' },
  { name: 'rest', label: 'HTTP+JSON' },
];

// --- the system under test -------------------------------------------------------------------
let stack;
let sutUrl = env.CONFORMANCE_URL?.replace(/\/+$/, '');
if (!sutUrl) {
  const base = Number(env.CONFORMANCE_PORT_BASE ?? 18080);
  sutUrl = `http://127.0.0.1:${base}`;
  const stackEnv = {
    ...env,
    DISPATCHER_PORT: String(base),
    DIRECTORY_PORT: String(base + 1),
    AGENTS_PORT: String(base + 2),
    BILLING_TOOLS_PORT: String(base + 3),
    DATABASE_URL: env.CONFORMANCE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/agent_mesh_conformance',
    TOPIC_PREFIX: env.CONFORMANCE_TOPIC_PREFIX ?? 'conformance.',
    // A host name, not an address: the TCK reports IP literals in a public card as exposed internals.
    DISPATCHER_PUBLIC_URL: `http://localhost:${base}`,
    DISPATCHER_ROOT_AGENT: 'tck-agent',
    // The TCK's tests send blocking SendMessage and expect a task still WORKING back (its reference
    // SUT answers when its executor returns); the spec has a blocking send wait for a terminal or
    // interrupted state, so a long-running turn answers with its handle when this wait ends.
    DISPATCHER_BLOCKING_TIMEOUT_MS: env.DISPATCHER_BLOCKING_TIMEOUT_MS ?? '2000',
    // The TCK's push tests run their webhook receiver on this machine.
    PUSH_EGRESS_ALLOW_CIDRS: env.PUSH_EGRESS_ALLOW_CIDRS ?? '127.0.0.0/8',
    // Its own local env file: the developer's .mesh/local.env keeps naming their own `npm start`.
    MESH_LOCAL_ENV: env.CONFORMANCE_LOCAL_ENV ?? join(root, '.mesh', 'conformance.env'),
    LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
  };
  console.log(`conformance: starting the platform on ${sutUrl} (scripts/start.mjs; database ${stackEnv.DATABASE_URL})`);
  stack = spawn(process.execPath, [join(root, 'scripts/start.mjs')], { env: stackEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const s of [stack.stdout, stack.stderr]) s.on('data', (d) => (output = (output + d).slice(-20000)));
  stack.on('exit', (code) => {
    if (!stopping) {
      console.error(output);
      fail(`the platform stopped (${code}) before the TCK finished`);
    }
  });
}
let stopping = false;
async function stopStack() {
  if (!stack || stack.exitCode !== null) return;
  stopping = true;
  const exited = new Promise((r) => stack.once('exit', r));
  stack.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 30000))]);
}
let pytest;
process.on('SIGINT', () => {
  pytest?.kill('SIGTERM');
  void stopStack().then(() => process.exit(130));
});

/** The card at the host root, once tck-agent is registered and served there. */
async function rootCard() {
  for (let i = 0; i < 480; i++) {
    try {
      const res = await fetch(`${sutUrl}/.well-known/agent-card.json`);
      if (res.ok) return await res.json();
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stopStack();
  fail(`no agent card at ${sutUrl}/.well-known/agent-card.json: is tck-agent registered and DISPATCHER_ROOT_AGENT=tck-agent set?`);
}
const card = await rootCard();
const declared = Object.entries(card.capabilities ?? {})
  .filter(([, v]) => v === true)
  .map(([k]) => k);
console.log(`conformance: ${card.name} at ${sutUrl}; declares ${declared.join(', ') || 'no optional capability'}`);

// --- the TCK ---------------------------------------------------------------------------------
const reports = mkdtempSync(join(tmpdir(), 'a2a-tck-'));

function runPytest(category, binding) {
  const junit = join(reports, `${category.name}-${binding.name}.xml`);
  const markers = category.markers(binding.name);
  const args = [
    '-m',
    'pytest',
    category.path,
    `--sut-url=${sutUrl}`,
    '--test-scope=all',
    `--transports=${binding.name}`,
    '--tb=short',
    '-q',
    '-p',
    'no:cacheprovider',
    `--junitxml=${junit}`,
    ...(markers ? ['-m', markers] : []),
  ];
  const command = `${python} ${args.join(' ')}`;
  console.log(`\nconformance: ${category.name} / ${binding.label}: ${command}`);
  return new Promise((resolve) => {
    const child = (pytest = spawn(python, args, {
      cwd: tckDir,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...env, A2A_AUTH_TYPE: 'bearer', A2A_AUTH_TOKEN: token, TCK_STREAMING_TIMEOUT: streamingTimeout },
    }));
    child.on('exit', (code) => resolve({ code, junit, command }));
  });
}

/** Counts and the names of failed tests from a JUnit XML report (pytest's own). */
function readJunit(file) {
  const counts = { passed: 0, failed: 0, errors: 0, skipped: 0 };
  const failures = [];
  if (!existsSync(file)) return { counts, failures, missing: true };
  const xml = readFileSync(file, 'utf8');
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attrs = m[1];
    const body = m[3] ?? '';
    const name = `${/classname="([^"]*)"/.exec(attrs)?.[1] ?? ''}::${/\sname="([^"]*)"/.exec(attrs)?.[1] ?? ''}`;
    if (/<failure\b/.test(body)) {
      counts.failed++;
      failures.push(name);
    } else if (/<error\b/.test(body)) {
      counts.errors++;
      failures.push(`${name} (error)`);
    } else if (/<skipped\b/.test(body)) counts.skipped++;
    else counts.passed++;
  }
  return { counts, failures };
}

const results = [];
try {
  for (const category of CATEGORIES) {
    for (const binding of BINDINGS) {
      const run = await runPytest(category, binding);
      results.push({ category: category.name, binding: binding.label, ...run, ...readJunit(run.junit) });
    }
  }
} finally {
  await stopStack();
}

// --- summary ---------------------------------------------------------------------------------
const line = (cells) => `| ${cells.join(' | ')} |`;
console.log(
  `\nA2A TCK ${tckCommit()} against ${card.name} at ${sutUrl} — ${new Date().toISOString()} on ${hostname()} (${cpus().length} CPUs)`,
);
console.log(line(['category', 'binding', 'passed', 'failed', 'errors', 'skipped']));
console.log(line(['---', '---', '---:', '---:', '---:', '---:']));
for (const r of results) console.log(line([r.category, r.binding, r.counts.passed, r.counts.failed, r.counts.errors, r.counts.skipped]));
const failed = results.filter((r) => r.failures.length > 0 || r.missing);
for (const r of failed) {
  console.log(`\n${r.category} / ${r.binding}: ${r.missing ? 'no report (pytest did not run)' : 'failed'}`);
  for (const f of r.failures) console.log(`  - ${f}`);
}
console.log(`\nJUnit reports: ${reports}`);
process.exit(failed.length > 0 ? 1 : 0);

function tckCommit() {
  const r = spawnSync('git', ['-C', tckDir, 'log', '-1', '--format=%h (%cs)'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : '(commit unknown)';
}
