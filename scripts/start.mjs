#!/usr/bin/env node
// `npm start`: the whole platform on this machine. Starts the local Kafka broker (or reuses one
// already listening), then the services with the demo configuration, each line of output prefixed
// by its service. Ctrl-C (or SIGTERM) stops every service, then the broker if this script started it.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const root = new URL('..', import.meta.url).pathname;
const kafkaSh = join(root, 'scripts/kafka.sh');

// The demo configuration (README: "Demo tenants"). Every value can be overridden from the environment.
const env = {
  AUTH_API_KEYS: 'demo-acme=acme:alice,demo-globex=globex:bob',
  DEMO: 'true',
  ...process.env,
};

const services = [
  { name: 'directory', script: 'apps/directory/dist/main.js' },
  { name: 'dispatcher', script: 'apps/dispatcher/dist/main.js' },
  { name: 'agents', script: 'apps/agents/dist/main.js' },
];

let startedKafka = false;
if (spawnSync(kafkaSh, ['status'], { stdio: 'ignore' }).status !== 0) {
  const r = spawnSync(kafkaSh, ['start'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  startedKafka = true;
}

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
    if (startedKafka) spawnSync(kafkaSh, ['stop'], { stdio: 'inherit' });
    process.exit(code);
  };
  for (const [name, child] of children) child.on('exit', () => (children.delete(name), done()));
  done();
}

for (const svc of services) {
  // Own process group: a terminal's Ctrl-C reaches only this script, which then drains each service once.
  const child = spawn(process.execPath, [join(root, svc.script)], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
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
}

process.on('SIGINT', () => stopAll(0));
process.on('SIGTERM', () => stopAll(0));
console.log(
  'start: dispatcher http://127.0.0.1:8080  directory http://127.0.0.1:8081  agents http://127.0.0.1:8082 (Ctrl-C stops everything)',
);
process.on('exit', () => {
  for (const child of children.values()) child.kill('SIGKILL');
});
