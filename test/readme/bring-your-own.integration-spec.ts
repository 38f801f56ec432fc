// The README's "Bring your own agent" block runs as written against `npm start`: a remote A2A
// server and a bridge worker started in the background answer the first curl with the remote's
// echo, then the team-agent example — packed libraries, npm install, build, its own worker — answers
// the second with its word count. The block runs in one bash from the repository root, as a reader
// pastes it; only the ports (and where npm start wrote its local env file) differ, and each curl is
// repeated until it completes, as a reader waits for what was started in the background.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase, testRun, uniquePrefix } from '../support/infra.js';
import { npmStart } from '../support/npm-start.js';
import { freePort, repoRoot } from '../support/processes.js';

/** The ```sh block under a README heading. */
export function shellBlockUnder(markdown: string, heading: string): string {
  const at = markdown.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `README has no "${heading}"`);
  const section = markdown.slice(at + 1).split(/\n## /)[0]!;
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section);
  assert.ok(block, `no sh block under "${heading}"`);
  return block[1]!;
}

/**
 * The block with each curl repeated (at most `waitSeconds`) until its answer is a completed task,
 * the last answer written to `answers/<n>.json`; every other line is left as it is.
 */
export function waitingForEachCurl(block: string, answers: string, waitSeconds: number): { script: string; curls: number } {
  // Commands as the shell reads them: a line ending in a backslash goes on with the next.
  const commands: string[] = [];
  for (const line of block.split('\n')) {
    const last = commands.length - 1;
    if (last >= 0 && commands[last]!.endsWith('\\')) commands[last] += `\n${line}`;
    else commands.push(line);
  }
  let curls = 0;
  const lines = commands.map((line) => {
    if (!line.startsWith('curl ')) return line;
    curls += 1;
    return [
      `readme_until=$((SECONDS + ${waitSeconds})) readme_tries=1`,
      `until readme_answer=$(${line}) && [[ $readme_answer == *TASK_STATE_COMPLETED* ]] || ((SECONDS > readme_until)); do sleep 1; ((readme_tries++)); done`,
      `echo "readme: curl ${curls} answered after $readme_tries attempt(s)" >&2`,
      `printf '%s' "$readme_answer" > '${join(answers, `${curls}.json`)}'`,
    ].join('\n');
  });
  return { script: lines.join('\n'), curls };
}

interface Answer {
  result?: {
    task?: {
      status: { state: string };
      artifacts?: { name?: string; parts: { text?: string; data?: Record<string, unknown> }[] }[];
    };
  };
  error?: unknown;
}

function answerIn(answers: string, n: number, output: () => string): Answer {
  const file = join(answers, `${n}.json`);
  assert.ok(existsSync(file), `curl ${n} never ran:\n${output().slice(-4000)}`);
  const text = readFileSync(file, 'utf8');
  try {
    return JSON.parse(text) as Answer;
  } catch {
    return assert.fail(`curl ${n} answered no JSON: ${text}\n${output().slice(-4000)}`);
  }
}

/** The process group is gone: every process the block started in the background has exited. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM to the group, SIGKILL to what is left after 30 s; false when SIGTERM was not enough. */
async function stopGroup(pgid: number): Promise<boolean> {
  if (!groupAlive(pgid)) return true;
  process.kill(-pgid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (!groupAlive(pgid)) return true;
  process.kill(-pgid, 'SIGKILL');
  return false;
}

test(
  'the README "Bring your own agent" block runs as written: the bridged remote echoes, the team worker counts',
  { timeout: 900_000 },
  async () => {
    const home = mkdtempSync(join(tmpdir(), 'mesh-readme-byo-'));
    after(() => rmSync(home, { recursive: true, force: true }));
    const brokers = testRun().brokers;
    const ports = {
      dispatcher: await freePort(),
      directory: await freePort(),
      agents: await freePort(),
      billing: await freePort(),
      remote: await freePort(),
      bridge: await freePort(),
      team: await freePort(),
    };
    const localEnv = join(home, 'local.env');
    // The run's shared broker (npm start reuses a broker listening on KAFKA_PORT), under a prefix of its own.
    await npmStart({
      KAFKA_BROKERS: brokers.join(','),
      KAFKA_PORT: brokers[0]!.split(':').pop(),
      DATABASE_URL: await freshDatabase('readme-byo'),
      TOPIC_PREFIX: uniquePrefix('readme-byo'),
      DISPATCHER_PORT: String(ports.dispatcher),
      DIRECTORY_PORT: String(ports.directory),
      AGENTS_PORT: String(ports.agents),
      BILLING_TOOLS_PORT: String(ports.billing),
      MESH_LOCAL_ENV: localEnv,
      AGENTS_OPS_TOKEN: undefined,
      AGENTS_TOOL_TOKEN_SECRET: undefined,
      PUSH_EGRESS_ALLOW_CIDRS: undefined,
    });

    const written = shellBlockUnder(readFileSync(join(repoRoot, 'README.md'), 'utf8'), '## Bring your own agent');
    const onPorts = written
      .replaceAll('.mesh/local.env', localEnv)
      .replaceAll('localhost:8080', `localhost:${ports.dispatcher}`)
      .replaceAll('localhost:8081', `localhost:${ports.directory}`)
      .replace(/(?<=[:=])9000\b/g, String(ports.remote))
      .replace(/(?<=[:=])8084\b/g, String(ports.bridge))
      .replace(/(?<=[:=])8085\b/g, String(ports.team));
    const answers = join(home, 'answers');
    rmSync(answers, { recursive: true, force: true });
    const { script, curls } = waitingForEachCurl(`mkdir -p '${answers}'\n${onPorts}`, answers, 300);
    assert.equal(curls, 2, written);

    // What the block leaves in the example's folder (ignored by git) is removed afterwards.
    const team = join(repoRoot, 'examples/team-agent');
    const hadLock = existsSync(join(team, 'package-lock.json'));
    after(() => {
      for (const made of ['node_modules', 'dist', 'vendor', ...(hadLock ? [] : ['package-lock.json'])])
        rmSync(join(team, made), { recursive: true, force: true });
    });

    // A reader's shell: no settings of this test run, only what the block itself sources. Its own
    // process group, so every background process it starts is stopped with it.
    const shell = spawn('bash', ['-c', script], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    shell.stdout.on('data', (d) => (output += d));
    shell.stderr.on('data', (d) => (output += d));
    after(() => stopGroup(shell.pid!));
    const code = await new Promise<number | null>((resolve) => shell.on('exit', (c) => resolve(c)));
    assert.equal(code, 0, output.slice(-4000));

    const echoed = answerIn(answers, 1, () => output);
    assert.equal(echoed.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(echoed));
    const echo = echoed.result!.task!.artifacts?.find((a) => a.name === 'echo');
    assert.deepEqual(
      echo?.parts.map((p) => p.text),
      ['hello'],
      `the remote's echo artifact: ${JSON.stringify(echoed.result!.task!.artifacts)}`,
    );

    const counted = answerIn(answers, 2, () => output);
    assert.equal(counted.result?.task?.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(counted));
    const count = counted.result!.task!.artifacts?.find((a) => a.name === 'count');
    assert.deepEqual(
      count?.parts.map((p) => p.data),
      [{ words: 4, characters: 22 }],
      `the team worker's count artifact: ${JSON.stringify(counted.result!.task!.artifacts)}`,
    );

    // The bridge, the remote server and the team's worker stop with their shell's process group.
    assert.ok(await stopGroup(shell.pid!), 'every background process exits on SIGTERM');
  },
);
