#!/usr/bin/env node
// node bench/heap-diff.mjs <start.heapsnapshot> <end.heapsnapshot> [--top=N] — what grew between two
// V8 heap snapshots of one process (the soak writes them with SOAK_HEAP_SNAPSHOT_DIR): objects
// grouped by type and constructor name, with count and self size in each and the growth, largest
// growth first. A leak shows as a group whose count climbs with the requests served; heap sizing
// (young generation, code) does not. Prints JSON.
import { readFileSync } from 'node:fs';

const [startFile, endFile] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (!startFile || !endFile) {
  console.error('usage: node bench/heap-diff.mjs <start.heapsnapshot> <end.heapsnapshot> [--top=N]');
  process.exit(2);
}
const top = Number(process.argv.find((a) => a.startsWith('--top='))?.slice(6) ?? 25);

/** Count and self size per `type:name` group of one snapshot. */
function groups(file) {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out = new Map();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt]];
    // Strings and code are grouped by type alone: their names are their contents.
    const name = ['object', 'closure', 'native', 'array', 'hidden'].includes(type) ? snap.strings[snap.nodes[i + nameAt]] : '';
    const key = `${type}:${name}`;
    const g = out.get(key) ?? { count: 0, bytes: 0 };
    g.count += 1;
    g.bytes += snap.nodes[i + sizeAt];
    total += snap.nodes[i + sizeAt];
    out.set(key, g);
  }
  return { groups: out, total };
}

const a = groups(startFile);
const b = groups(endFile);
const keys = new Set([...a.groups.keys(), ...b.groups.keys()]);
const rows = [...keys].map((key) => {
  const x = a.groups.get(key) ?? { count: 0, bytes: 0 };
  const y = b.groups.get(key) ?? { count: 0, bytes: 0 };
  return {
    group: key,
    count: [x.count, y.count],
    countGrowth: y.count - x.count,
    kib: [Math.round(x.bytes / 1024), Math.round(y.bytes / 1024)],
    kibGrowth: Math.round((y.bytes - x.bytes) / 1024),
  };
});
rows.sort((p, q) => q.kibGrowth - p.kibGrowth);
const mib = (n) => Math.round((n / 1048576) * 10) / 10;
console.log(
  JSON.stringify(
    {
      startMiB: mib(a.total),
      endMiB: mib(b.total),
      growthMiB: mib(b.total - a.total),
      grewMost: rows.slice(0, top),
      byCount: [...rows].sort((p, q) => q.countGrowth - p.countGrowth).slice(0, top),
    },
    null,
    2,
  ),
);
