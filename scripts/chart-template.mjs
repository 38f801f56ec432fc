#!/usr/bin/env node
// A stand-in for `helm template` where no Helm binary exists: renders charts/agent-mesh with the
// test's Go template interpreter (values checked against values.schema.json first) and prints the
// manifests. Needs `npm run build` first (it uses test/dist). Usage:
//   node scripts/chart-template.mjs [-f values.yaml]... [--set-json '{"keda":{"enabled":true}}'] [--name mesh] [--namespace ns]
import { readFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';

const root = new URL('..', import.meta.url).pathname;
const { Chart, mergeValues } = await import(`${root}test/dist/charts/support/helm.js`).catch(() => {
  console.error('chart-template: run `npm run build` first (test/dist is missing)');
  process.exit(1);
});

const args = process.argv.slice(2);
let overrides = {};
const opts = {};
for (let i = 0; i < args.length; i++) {
  const [flag, value] = [args[i], args[++i]];
  if (value === undefined) usage(`${flag} needs a value`);
  if (flag === '-f' || flag === '--values')
    overrides = mergeValues(overrides, parse(readFileSync(value, 'utf8'), { version: '1.1' }) ?? {});
  else if (flag === '--set-json') overrides = mergeValues(overrides, JSON.parse(value));
  else if (flag === '--name') opts.releaseName = value;
  else if (flag === '--namespace') opts.namespace = value;
  else usage(`unknown option ${flag}`);
}

function usage(problem) {
  console.error(
    `chart-template: ${problem}\nusage: node scripts/chart-template.mjs [-f values.yaml]... [--set-json JSON] [--name NAME] [--namespace NS]`,
  );
  process.exit(2);
}

try {
  const { manifests } = new Chart(`${root}charts/agent-mesh`).render(overrides, opts);
  for (const { source, ...obj } of manifests) process.stdout.write(`---\n# Source: ${source}\n${stringify(obj, { lineWidth: 0 })}`);
} catch (err) {
  console.error(`chart-template: ${err.message}`);
  process.exit(1);
}
