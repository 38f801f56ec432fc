// Every workspace package declares what its code imports, at the version the root pins, so a
// package installed on its own (a team's worker from the packed @mesh/* tarballs) finds all of it.
// Imports of unit specs (*.spec.ts) are test tools: they stay at the root. The libraries a team
// needs to run its own worker are publishable: not private, only dist in the tarball, built on pack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { repoRoot } from '../support/processes.js';

interface PackageJson {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  engines?: { node?: string };
  files?: string[];
  main?: string;
  types?: string;
  exports?: Record<string, { types?: string; default?: string }>;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** The packages `@mesh/agent-sdk` and `@mesh/agent-runtime` need: what a team installs. */
export const TEAM_PACKAGES = ['@mesh/agent-sdk', '@mesh/agent-runtime'];

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as PackageJson;
const rootPkg = readJson(join(repoRoot, 'package.json'));
const rootPins: Record<string, string> = { ...rootPkg.dependencies, ...rootPkg.devDependencies };

/** The package an import specifier names (`@scope/name/deep` → `@scope/name`), or null for relative and `node:` ones. */
export function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** `createRequire(…)('name')`: a require the compiler does not see as one (it is not called `require`). */
const CREATED_REQUIRE = /createRequire\([^)]*\)\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * Packages a source file loads: static and type imports, re-exports, `import()` and `require()`, as
 * the compiler reads them, and `createRequire(…)('name')`.
 */
export function importsOf(source: string): string[] {
  const info = ts.preProcessFile(source, true, true);
  const specifiers = [...info.importedFiles.map((f) => f.fileName), ...[...source.matchAll(CREATED_REQUIRE)].map((m) => m[1]!)];
  return [...new Set(specifiers.map(packageOf).filter((p): p is string => p !== null))];
}

/** Files under `dir` whose name ends in `suffix` (`.ts` excludes declaration files). */
function sources(dir: string, suffix = '.ts', out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) sources(path, suffix, out);
    else if (path.endsWith(suffix) && (suffix !== '.ts' || !path.endsWith('.d.ts'))) out.push(path);
  }
  return out;
}

/** The DefinitelyTyped package of `name` (`@scope/x` → `@types/scope__x`). */
const typesOf = (name: string) => `@types/${name.replace(/^@/, '').replace('/', '__')}`;

const workspaces = ['libs', 'apps'].flatMap((top) =>
  readdirSync(join(repoRoot, top)).map((d) => ({ dir: join(repoRoot, top, d), pkg: readJson(join(repoRoot, top, d, 'package.json')) })),
);
const byName = new Map(workspaces.map((w) => [w.pkg.name, w]));

test('the import reader sees every way a file loads a package', () => {
  const source = [
    "import { z } from 'zod';",
    "import type { Kafka } from 'kafkajs';",
    "export { trace } from '@opentelemetry/api';",
    "import 'reflect-metadata';",
    "const pg = await import('pg');",
    "createRequire(import.meta.url)('@opentelemetry/instrumentation-kafkajs');",
    "const k = require('canonicalize');",
    "import { join } from 'node:path';",
    "import { local } from './local.js';",
    "import { deep } from '@nestjs/common/decorators';",
  ].join('\n');
  assert.deepEqual(importsOf(source).sort(), [
    '@nestjs/common',
    '@opentelemetry/api',
    '@opentelemetry/instrumentation-kafkajs',
    'canonicalize',
    'kafkajs',
    'pg',
    'reflect-metadata',
    'zod',
  ]);
});

test('every workspace package declares each package its code imports, at the root-pinned version', () => {
  const problems: string[] = [];
  for (const { dir, pkg } of workspaces) {
    const declared = { ...pkg.dependencies };
    for (const file of sources(join(dir, 'src'))) {
      const spec = file.endsWith('.spec.ts');
      for (const name of importsOf(readFileSync(file, 'utf8'))) {
        if (name === pkg.name) continue;
        const where = `${pkg.name}: ${file.slice(repoRoot.length)} imports ${name}`;
        if (spec) {
          // A spec's tools come from the package or the root (npm workspaces hoist them).
          if (!declared[name] && !pkg.devDependencies?.[name] && !rootPins[name] && !byName.has(name))
            problems.push(`${where}, declared nowhere`);
        } else if (!declared[name]) problems.push(`${where}, not in its dependencies`);
      }
    }
    for (const [name, version] of Object.entries(declared)) {
      const want = byName.get(name)?.pkg.version ?? rootPins[name];
      if (want === undefined) problems.push(`${pkg.name}: depends on ${name}, which neither the root nor the workspace pins`);
      else if (version !== want) problems.push(`${pkg.name}: ${name}@${version}, the root pins ${want}`);
    }
  }
  assert.deepEqual(problems, []);
});

/** The @mesh packages `names` depend on, themselves included. */
function meshClosure(names: string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const dep of Object.keys(byName.get(name)?.pkg.dependencies ?? {})) if (byName.has(dep)) visit(dep);
  };
  names.forEach(visit);
  return [...seen].sort();
}

test('the libraries a team worker needs are publishable', () => {
  const closure = meshClosure(TEAM_PACKAGES);
  assert.ok(closure.includes('@mesh/contract') && closure.includes('@mesh/bus'), closure.join());
  for (const name of closure) {
    const { pkg } = byName.get(name)!;
    assert.notEqual(pkg.private, true, `${name} is private`);
    assert.ok(pkg.license, `${name} has a license field`);
    assert.equal(pkg.engines?.node, rootPkg.engines?.node, `${name} states the Node versions it runs on`);
    assert.deepEqual(pkg.files, ['dist', '!dist/**/*.spec.*', '!dist/.tsbuildinfo'], `${name} packs dist only, no specs`);
    assert.equal(pkg.types, './dist/index.d.ts', name);
    assert.deepEqual(pkg.exports, { '.': { types: './dist/index.d.ts', default: './dist/index.js' } }, name);
    assert.equal(pkg.scripts?.prepack, 'tsc -b', `${name} builds itself when packed`);
  }
});

test("a team's compiler finds every type the published declarations name (no skipLibCheck needed)", () => {
  // tsc -b ran before the unit specs: dist holds what npm pack ships.
  const problems: string[] = [];
  for (const name of meshClosure(TEAM_PACKAGES)) {
    const { dir, pkg } = byName.get(name)!;
    const declared = pkg.dependencies ?? {};
    for (const file of sources(join(dir, 'dist'), '.d.ts').filter((f) => !f.includes('.spec.'))) {
      for (const imported of importsOf(readFileSync(file, 'utf8'))) {
        if (imported === name) continue;
        // A package without types of its own is typed by its @types package, which the root pins.
        const types = typesOf(imported);
        const where = `${name}: ${file.slice(repoRoot.length)} names ${imported}`;
        if (!declared[imported]) problems.push(`${where}, not in its dependencies`);
        else if (rootPins[types] && !declared[types]) problems.push(`${where}, but ${types} is not in its dependencies`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('the team example stays outside the workspace and lists every packed library at its version', () => {
  const workspaces = (rootPkg as PackageJson & { workspaces: string[] }).workspaces;
  assert.ok(!workspaces.some((w) => w.startsWith('examples')), 'examples/ is not an npm workspace');
  const build = JSON.parse(readFileSync(join(repoRoot, 'tsconfig.build.json'), 'utf8')) as { references: { path: string }[] };
  assert.ok(!build.references.some((r) => r.path.startsWith('examples')), 'examples/ is not in the root build');
  const example = readJson(join(repoRoot, 'examples/team-agent/package.json'));
  // npm pack names a tarball <scope>-<name>-<version>.tgz.
  const tarball = (name: string) => `file:vendor/${name.replace(/^@/, '').replace('/', '-')}-${byName.get(name)!.pkg.version}.tgz`;
  assert.deepEqual(example.dependencies, Object.fromEntries(meshClosure(TEAM_PACKAGES).map((n) => [n, tarball(n)])));
  for (const [name, version] of Object.entries(example.devDependencies ?? {})) {
    const locked = (
      JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
    ).packages[`node_modules/${name}`]?.version;
    assert.equal(version, locked, `the example's ${name} is the version the platform builds with`);
  }
});
