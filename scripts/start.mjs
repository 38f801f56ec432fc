#!/usr/bin/env node
// `npm start`: the whole platform on this machine. Starts the local Kafka broker (or reuses one
// already listening), then the services with the demo configuration, each line of output prefixed
// by its service. Ctrl-C (or SIGTERM) stops every service, then the broker if this script started it.
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { parseEnv } from 'node:util';
import { localEnvPath, localSecrets, readLocalEnv, writeLocalEnv } from '../apps/cli/dist/local-env.js';
import { agentsNodeFlags, dispatcherNodeFlags } from './node-flags.mjs';

const root = new URL('..', import.meta.url).pathname;
const kafkaSh = join(root, 'scripts/kafka.sh');

// The local env file (.mesh/local.env, mode 0600, ignored by git; MESH_LOCAL_ENV moves it): the
// secrets are generated on the first start and kept for every later one — the bearer token of the
// agents' /ops endpoints — and the dispatcher's token endpoint is written beside them, so the CLI,
// the console and a second worker started by hand keep working across restarts.
const localEnv = localEnvPath(process.env);
// A file other users could read is refused, not reused: its secrets may be theirs too.
let secrets;
try {
  secrets = localSecrets(readLocalEnv(localEnv), process.env);
} catch (err) {
  console.error(`start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
// The legacy shared tool-token secret only when the environment gives one (a trusted platform
// worker); otherwise the agents exchange each run command's grant at the dispatcher.
const toolTokenSecret = process.env.AGENTS_TOOL_TOKEN_SECRET || undefined;
const opsToken = secrets.AGENTS_OPS_TOKEN;

// The dispatcher's Ed25519 signing key (grants and tool tokens), beside the local env file, mode
// 0600, made on the first start and reused: tokens and grants stay valid across restarts. A key
// file other users could read is refused, as the env file is.
const signingKeyFile = process.env.DISPATCHER_SIGNING_KEY_FILE ?? join(dirname(localEnv), 'dispatcher-signing-key.pem');
try {
  if (existsSync(signingKeyFile)) {
    if ((statSync(signingKeyFile).mode & 0o077) !== 0)
      throw new Error(`${signingKeyFile} is readable by other users: remove it (a new key is made) or chmod 600 it`);
    readFileSync(signingKeyFile);
  } else {
    mkdirSync(dirname(signingKeyFile), { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(signingKeyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    chmodSync(signingKeyFile, 0o600);
  }
} catch (err) {
  console.error(`start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}

// The demo configuration (README: "Try it"). Every value can be overridden from the environment.
// Every service listens on 127.0.0.1 (HTTP_HOST's default). Push webhooks may reach receivers on this
// machine (loopback), which the dispatcher's egress policy refuses unless allowed: development only.
const kafkaPort = process.env.KAFKA_PORT ?? '9092';
const env = {
  AUTH_API_KEYS: 'demo-acme=acme:alice,demo-globex=globex:bob',
  KAFKA_BROKERS: `127.0.0.1:${kafkaPort}`,
  PUSH_EGRESS_ALLOW_CIDRS: '127.0.0.0/8,::1/128',
  ...process.env,
};
const portOf = (name, fallback) => Number(env[name] ?? fallback);
const ports = {
  dispatcher: portOf('DISPATCHER_PORT', 8080),
  directory: portOf('DIRECTORY_PORT', 8081),
  agents: portOf('AGENTS_PORT', 8082),
  billing: portOf('BILLING_TOOLS_PORT', 8083),
};

let startedKafka = false;
// The broker keeps its data from one start to the next, as Postgres does (commands accepted before a
// Ctrl-C are still delivered); a broker that cannot resume is formatted afresh, and the directory then
// republishes every agent from its database.
if (spawnSync(kafkaSh, ['status'], { stdio: 'ignore', env }).status !== 0) {
  const home = env.KAFKA_HOME_DIR ?? join(root, '.kafka');
  const earlier = existsSync(join(home, `server-${kafkaPort}.properties`)) && existsSync(join(home, `data-${kafkaPort}`));
  const resumed = earlier && spawnSync(kafkaSh, ['resume'], { stdio: 'inherit', env }).status === 0;
  const r = resumed ? { status: 0 } : spawnSync(kafkaSh, ['start'], { stdio: 'inherit', env });
  if (r.status !== 0) process.exit(r.status ?? 1);
  startedKafka = true;
}

// Each service connects as its own Kafka principal (docs/operations.md, "Kafka identities"): the
// passwords scripts/kafka.sh generated into its credentials file. KAFKA_USERNAME in the environment
// instead gives every service that one principal (a broker this script does not know); KAFKA_AUTH=none
// or a broker without a credentials file: no authentication.
const principals = kafkaPrincipals();
function kafkaPrincipals() {
  const as = (username, password) => ({
    KAFKA_SASL_MECHANISM: env.KAFKA_SASL_MECHANISM ?? 'scram-sha-512',
    KAFKA_USERNAME: username,
    KAFKA_PASSWORD: password,
  });
  if (env.KAFKA_USERNAME) {
    const given = as(env.KAFKA_USERNAME, env.KAFKA_PASSWORD);
    return { admin: given, dispatcher: given, directory: given, agents: given };
  }
  const file = join(env.KAFKA_HOME_DIR ?? join(root, '.kafka'), 'credentials.env');
  if (env.KAFKA_AUTH === 'none' || !existsSync(file)) return { admin: {}, dispatcher: {}, directory: {}, agents: {} };
  const passwords = parseEnv(readFileSync(file, 'utf8'));
  const of = (name) => as(`mesh-${name}`, passwords[`KAFKA_${name.toUpperCase()}_PASSWORD`]);
  return { admin: of('admin'), dispatcher: of('dispatcher'), directory: of('directory'), agents: of('agents') };
}

// What a second local process needs (the CLI and console, another worker, a script): written before
// the services start, so a failed start still leaves the tokens it would have used. Kafka as the
// admin principal: the CLI reads dead letters and lag, a second worker needs a principal too.
const billingServers = env.AGENTS_MCP_SERVERS ?? JSON.stringify({ billing: { url: `http://127.0.0.1:${ports.billing}/mcp` } });
const dispatcherUrl = `http://127.0.0.1:${ports.dispatcher}`;
const issuer = env.DISPATCHER_ISSUER ?? dispatcherUrl;
const tokenUrl = env.AGENTS_TOKEN_URL ?? `${dispatcherUrl}/oauth/token`;
writeLocalEnv(
  localEnv,
  {
    MESH_OPS_TOKEN: opsToken,
    AGENTS_OPS_TOKEN: opsToken,
    // No tool-token secret: a worker started from this file exchanges its grants here.
    AGENTS_TOKEN_URL: tokenUrl,
    MESH_TOKEN: 'demo-acme',
    AGENTS_DIRECTORY_TOKEN: 'demo-acme',
    AGENTS_DIRECTORY_URL: `http://127.0.0.1:${ports.directory}`,
    AGENTS_MCP_SERVERS: billingServers,
    MESH_DISPATCHER_URL: `http://127.0.0.1:${ports.dispatcher}`,
    MESH_DIRECTORY_URL: `http://127.0.0.1:${ports.directory}`,
    MESH_AGENTS_URL: `http://127.0.0.1:${ports.agents}`,
    KAFKA_BROKERS: env.KAFKA_BROKERS,
    ...principals.admin,
    TOPIC_PREFIX: env.TOPIC_PREFIX ?? '',
    DATABASE_URL: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/agent_mesh',
  },
  [
    'Written by `npm start` for the platform it runs on this machine; the secrets are kept across starts.',
    '`mesh` and `mesh console` read it when no flag or variable gives a value. A second worker:',
    '  set -a; . .mesh/local.env; set +a; AGENTS_PORT=8084 AGENTS_RUN=refund-agent node apps/agents/dist/main.js',
  ],
);

// Started in this order; each waits for the previous one's /healthz so registration finds the directory.
const services = [
  // DEMO: development API keys and a temporary card-signing key.
  { name: 'directory', script: 'apps/directory/dist/main.js', port: ports.directory, env: { DEMO: 'true', ...principals.directory } },
  {
    name: 'billing-tools',
    script: 'apps/billing-tools/dist/main.js',
    port: ports.billing,
    // Tokens the dispatcher issued (its JWKS); also the legacy secret's, when one is given.
    env: {
      BILLING_TOOLS_JWKS_URL: `${dispatcherUrl}/.well-known/jwks.json`,
      BILLING_TOOLS_TOKEN_ISSUER: issuer,
      ...(toolTokenSecret ? { BILLING_TOKEN_SECRET: toolTokenSecret } : {}),
    },
  },
  // The agents app serves echo-agent, refund-agent, invoice-agent, triage-agent (delegating to the
  // two before it) and tck-agent (the A2A TCK's, `npm run conformance`) and registers them (owned by
  // acme, public).
  {
    name: 'agents',
    script: 'apps/agents/dist/main.js',
    nodeFlags: agentsNodeFlags,
    port: ports.agents,
    env: {
      AGENTS_RUN: env.AGENTS_RUN ?? 'echo-agent,refund-agent,invoice-agent,triage-agent,tck-agent',
      AGENTS_DIRECTORY_URL: `http://127.0.0.1:${ports.directory}`,
      AGENTS_DIRECTORY_TOKEN: 'demo-acme',
      AGENTS_TOKEN_URL: tokenUrl,
      AGENTS_OPS_TOKEN: opsToken,
      AGENTS_MCP_SERVERS: billingServers,
      ...principals.agents,
    },
  },
  // DISPATCHER_PROCESSES (from the environment, default 1) runs it as that many processes on its port.
  {
    name: 'dispatcher',
    script: 'apps/dispatcher/dist/main.js',
    nodeFlags: dispatcherNodeFlags,
    port: ports.dispatcher,
    // `/ops/teams` (team bindings, `mesh teams`) takes the same ops token as the agents' /ops.
    env: {
      DISPATCHER_SIGNING_KEY_FILE: signingKeyFile,
      DISPATCHER_ISSUER: issuer,
      DISPATCHER_OPS_TOKEN: opsToken,
      ...principals.dispatcher,
    },
  },
];

const children = new Map();
let stopping = false;

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  console.log('start: stopping services…');
  for (const child of children.values()) child.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
  }, 20000);
  const done = () => {
    if (children.size > 0) return;
    clearTimeout(force);
    if (startedKafka) spawnSync(kafkaSh, ['stop'], { stdio: 'inherit', env });
    process.exit(code);
  };
  for (const [name, child] of children) child.on('exit', () => (children.delete(name), done()));
  done();
}

process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));

async function healthy(port) {
  for (let i = 0; i < 240 && !stopping; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

for (const svc of services) {
  if (stopping) break;
  // Own process group: a terminal's Ctrl-C reaches only this script, which then drains each service once.
  const child = spawn(process.execPath, [...(svc.nodeFlags ?? []), join(root, svc.script)], {
    env: { ...env, ...svc.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.set(svc.name, child);
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => console.log(`[${svc.name}] ${line}`));
  }
  child.on('exit', (code, signal) => {
    children.delete(svc.name);
    if (!stopping) {
      console.error(`start: ${svc.name} exited (${signal ?? code}); stopping everything`);
      stopAll(1);
    }
  });
  if (!(await healthy(svc.port)) && !stopping) {
    console.error(`start: ${svc.name} did not become ready on :${svc.port}; stopping everything`);
    stopAll(1);
  }
}

if (!stopping) {
  console.log(
    `start: ready: dispatcher http://127.0.0.1:${ports.dispatcher}, directory :${ports.directory}, agents :${ports.agents}, billing-tools :${ports.billing}/mcp (Ctrl-C stops everything)`,
  );
  // The tokens themselves are never printed: they are in the file, which the CLI and console read.
  const shown = localEnv.startsWith(root) ? relative(root, localEnv) : localEnv;
  console.log(`start: ops token, token endpoint and demo settings in ${shown} (mode 0600; read by mesh and its console)`);
}
process.on('exit', () => {
  for (const child of children.values()) child.kill('SIGKILL');
});
