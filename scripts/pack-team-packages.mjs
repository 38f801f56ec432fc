#!/usr/bin/env node
// Packs the libraries a team needs to run its own worker — @mesh/agent-sdk, @mesh/agent-runtime and
// every @mesh package they depend on — into one folder of tarballs (each package builds itself
// first: its prepack runs `tsc -b`). A team project lists every one of them as a `file:` dependency
// (examples/team-agent/package.json), so npm never looks for a @mesh package in a registry.
// Usage: node scripts/pack-team-packages.mjs [destination] (default examples/team-agent/vendor)
// Prints one JSON line per tarball: {"name": "@mesh/agent-sdk", "file": "/abs/mesh-agent-sdk-0.1.0.tgz"}.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const destination = resolve(process.argv[2] ?? join(root, 'examples/team-agent/vendor'));

/** Workspace packages by name, with their folder. */
const workspaces = new Map();
for (const top of ['libs', 'apps']) {
  for (const dir of readdirSync(join(root, top))) {
    const pkg = JSON.parse(readFileSync(join(root, top, dir, 'package.json'), 'utf8'));
    workspaces.set(pkg.name, { dir: join(top, dir), pkg });
  }
}

/** The team packages and the @mesh packages they depend on, transitively. */
export function teamPackages(names = ['@mesh/agent-sdk', '@mesh/agent-runtime']) {
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    const ws = workspaces.get(name);
    if (!ws) throw new Error(`pack-team-packages: ${name} is not a workspace package`);
    if (ws.pkg.private) throw new Error(`pack-team-packages: ${name} is private; a team cannot install it`);
    seen.add(name);
    for (const dep of Object.keys(ws.pkg.dependencies ?? {})) if (workspaces.has(dep)) visit(dep);
  };
  names.forEach(visit);
  return [...seen].sort();
}

mkdirSync(destination, { recursive: true });
const names = teamPackages();
const packed = JSON.parse(
  execFileSync('npm', ['pack', '--json', '--pack-destination', destination, ...names.map((n) => `--workspace=${workspaces.get(n).dir}`)], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }),
);
for (const p of packed) console.log(JSON.stringify({ name: p.name, file: join(destination, p.filename) }));
