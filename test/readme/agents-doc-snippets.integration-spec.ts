// Every TypeScript block of docs/agents.md runs as written: each is compiled on its own against
// the workspace packages (strict, as a team's project compiles it), the agents a block defines are
// registered with a real directory by the runtime, and a block that is a worker's main file
// (`runAgents(…)`) is run as its own process until it serves, registered and ready.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import type { AgentDefinition } from '@mesh/agent-sdk';
import { client, KEYS, startTestDirectory } from '../directory/directory-fixtures.js';
import { eventually, freshDatabase, testRun } from '../support/infra.js';
import { kafkaClientEnv } from '../support/kafka-principals.js';
import { freePort, repoRoot, spawnNode } from '../support/processes.js';
import { standInForTopicOwners } from '../support/topic-owners.js';

/** The ```ts blocks of a Markdown text, with the line each starts on. */
export function typescriptBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  for (const m of markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm))
    blocks.push({ line: markdown.slice(0, m.index).split('\n').length, code: m[1]! });
  return blocks;
}

const blocks = typescriptBlocks(readFileSync(join(repoRoot, 'docs/agents.md'), 'utf8'));
// Inside the repository so the blocks' imports resolve to the workspace packages; dist is not committed.
const workdir = join(repoRoot, 'test/dist/readme/agents-doc');
rmSync(workdir, { recursive: true, force: true });
mkdirSync(workdir, { recursive: true });
after(() => rmSync(workdir, { recursive: true, force: true }));
const files = blocks.map((b) => {
  const file = join(workdir, `line-${b.line}.ts`);
  writeFileSync(file, b.code);
  return { ...b, file, js: file.replace(/\.ts$/, '.js'), main: /\brunAgents\(/.test(b.code) };
});

const { dir, prefix } = await startTestDirectory('agents-doc');
const directory = client(dir.url);
await standInForTopicOwners(prefix);
const databaseUrl = await freshDatabase('agents-doc');

test('docs/agents.md has TypeScript blocks: a defineAgent example, the delegation example and a worker main file', () => {
  assert.ok(files.length >= 3, `${files.length} blocks`);
  assert.ok(files.some((f) => f.main));
  assert.deepEqual(
    typescriptBlocks('text\n```ts\nconst a = 1;\n```\n```sh\nls\n```\n```ts\nconst b = 2;\n```\n').map((b) => [b.line, b.code]),
    [
      [2, 'const a = 1;\n'],
      [8, 'const b = 2;\n'],
    ],
  );
});

test('every block compiles on its own, strict, against the workspace packages', () => {
  const base = ts.getParsedCommandLineOfConfigFile(
    join(repoRoot, 'tsconfig.base.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  )!;
  const options: ts.CompilerOptions = {
    ...base.options,
    composite: false,
    incremental: false,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    outDir: workdir,
    rootDir: workdir,
  };
  const program = ts.createProgram(
    files.map((f) => f.file),
    options,
  );
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...program.emit().diagnostics].map(
    (d) =>
      `${d.file ? `${d.file.fileName.slice(workdir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start!).line + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
  );
  assert.deepEqual(diagnostics, [], 'docs/agents.md block (file named after its first line) does not compile');
});

test("the agents the blocks define are accepted by the directory: the runtime registers each under the owner's token", async () => {
  const defined: AgentDefinition[] = [];
  for (const f of files.filter((f) => !f.main)) {
    const mod = (await import(pathToFileURL(f.js).href)) as Record<string, unknown>;
    defined.push(
      ...Object.values(mod).filter((v): v is AgentDefinition => typeof v === 'object' && v !== null && 'handler' in v && 'card' in v),
    );
  }
  assert.ok(defined.length >= 2, defined.map((a) => a.id).join());
  const running = await startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        ...kafkaClientEnv(),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: databaseUrl,
        AGENTS_DIRECTORY_URL: dir.url,
        AGENTS_DIRECTORY_TOKEN: KEYS.acme,
      }),
      AGENTS_PORT: 0,
    },
    defined,
  );
  await running.stop();
  for (const agent of defined) {
    const view = await directory(KEYS.acme, 'GET', `/v1/agents/${agent.id}`);
    assert.equal(view.status, 200, `${agent.id}: ${JSON.stringify(view.body)}`);
    assert.equal(view.body.card.name, agent.card.name);
  }
});

test('the worker main file runs as written: registered, ready, drained on SIGTERM', async () => {
  for (const f of files.filter((f) => f.main)) {
    const port = await freePort();
    const worker = spawnNode(
      f.js,
      {
        PATH: process.env.PATH,
        KAFKA_BROKERS: testRun().brokers.join(','),
        ...kafkaClientEnv(),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: databaseUrl,
        AGENTS_DIRECTORY_URL: dir.url,
        AGENTS_DIRECTORY_TOKEN: KEYS.acme,
        AGENTS_PORT: String(port),
      },
      [],
      { ownEnv: true },
    );
    const output = () => worker.stdout() + worker.stderr();
    await eventually(
      `the block at line ${f.line} serves`,
      async () => {
        if (worker.child.exitCode !== null) throw new Error(`exited ${worker.child.exitCode}:\n${output()}`);
        return (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok;
      },
      90_000,
      250,
    );
    const id = /id: '([^']+)'/.exec(f.code)![1]!;
    const view = await directory(KEYS.acme, 'GET', `/v1/agents/${id}`);
    assert.equal(view.status, 200, `${id}: ${JSON.stringify(view.body)}`);
    worker.child.kill('SIGTERM');
    assert.equal((await worker.exited).code, 0, output());
  }
});
