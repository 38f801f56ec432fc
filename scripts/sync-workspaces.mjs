#!/usr/bin/env node
// Regenerates the files that list every workspace package (tsconfig.build.json, test/tsconfig.json
// references, test/package.json dependencies) from the libs/ and apps/ folders, so adding a package
// is one command and parallel branches never conflict on hand-edited lists.
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const pkgs = ['libs', 'apps'].flatMap((top) =>
  readdirSync(join(root, top))
    .filter((d) => existsSync(join(root, top, d, 'package.json')) && existsSync(join(root, top, d, 'tsconfig.json')))
    .sort()
    .map((d) => ({ dir: `${top}/${d}`, name: JSON.parse(readFileSync(join(root, top, d, 'package.json'), 'utf8')).name })),
);
const refs = (prefix, dirs) => dirs.map((d) => `    { "path": "${prefix}${d}" }`).join(',\n');

writeFileSync(
  join(root, 'tsconfig.build.json'),
  `{\n  "files": [],\n  "references": [\n${refs('', [...pkgs.map((p) => p.dir), 'test'])}\n  ]\n}\n`,
);
const testTs = JSON.parse(readFileSync(join(root, 'test/tsconfig.json'), 'utf8'));
writeFileSync(
  join(root, 'test/tsconfig.json'),
  `{\n  "extends": "${testTs.extends}",\n  "compilerOptions": ${JSON.stringify(testTs.compilerOptions).replace(/,"/g, ', "').replace(/":/g, '": ').replace(/^\{/, '{ ').replace(/\}$/, ' }')},\n  "include": ["**/*.ts"],\n  "exclude": ["dist"],\n  "references": [\n${refs(
    '../',
    pkgs.map((p) => p.dir),
  )}\n  ]\n}\n`,
);
const testPkg = JSON.parse(readFileSync(join(root, 'test/package.json'), 'utf8'));
testPkg.dependencies = Object.fromEntries(pkgs.map((p) => [p.name, '0.1.0']));
writeFileSync(join(root, 'test/package.json'), `${JSON.stringify(testPkg, null, 2)}\n`);
console.log(`sync-workspaces: ${pkgs.length} packages`);
