import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import type { Task } from '@a2a-js/sdk';
// Types only: `mesh --help` must not load @mesh/contract (zod) — see RESOLUTIONS for its one value.
import type { OpsResolved, OpsUnknowns, OpsWorkers, UnknownResolution } from '@mesh/contract';
import { CliError, ExitCode } from './cli-error.js';
import { requestJson } from './http-client.js';
import { terminalSafe } from './terminal-text.js';
import type { KafkaTarget } from './kafka-ops.js';

// Kafka (kafkajs via @mesh/bus), the A2A SDK and @mesh/contract (zod) load inside the actions that
// use them: `mesh --help` and the HTTP-only commands start without them.
const a2a = () => import('./a2a-client.js');
const kafkaOps = () => import('./kafka-ops.js');

/** Where output goes (tests capture it). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

const processIo: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  env: process.env,
};

interface Globals {
  directoryUrl: string;
  dispatcherUrl: string;
  agentsUrl: string;
  token?: string;
  opsToken?: string;
  brokers: string;
  prefix: string;
  json?: boolean;
}

const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
};

const nonNegative = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a non-negative integer');
  return n;
};

const port = (v: string) => {
  const n = nonNegative(v);
  if (n > 65535) throw new InvalidArgumentError('expected a port from 0 to 65535');
  return n;
};

/** Every resolution of the ops API with its meaning: a Record, so the compiler flags one missing or extra. */
const RESOLUTIONS: Record<UnknownResolution, string> = {
  ok: 'it happened',
  error: 'it failed',
  absent: 'it never happened',
};

type AgentView = {
  id: string;
  tenant: string;
  visibility: string;
  version: number;
  healthy: boolean;
  retired: boolean;
  card: { name?: string };
};

/** Where mesh takes a credential from, said when a service refused a request for want of it, or refused the one given. */
function credentialHint(err: CliError, given: Globals): string {
  if (err.credential === 'token')
    return given.token
      ? ' (the token given was refused: check --token or MESH_TOKEN)'
      : " (no token given: pass --token or set MESH_TOKEN to an API key or JWT; npm start's development keys are demo-acme and demo-globex)";
  if (err.credential === 'opsToken')
    return given.opsToken
      ? ' (the ops token given was refused: check --ops-token or MESH_OPS_TOKEN; npm start prints the one of its start)'
      : ' (no ops token given: pass --ops-token or set MESH_OPS_TOKEN; npm start prints the one of its start)';
  return '';
}

/** A failure as one line, with the credential hint: for the `problems` of a view that still prints. */
function describeFailure(err: unknown, given: Globals): string {
  return err instanceof CliError ? err.message + credentialHint(err, given) : err instanceof Error ? err.message : String(err);
}

/** Builds the `mesh` program; actions write through `io` and throw CliError on failure. */
export function buildProgram(io: CliIo = processIo, jsonRequested = false): Command {
  const program = new Command('mesh')
    .description('Operate an agent mesh: agents, tasks, lag, dead letters and unknown tool outcomes')
    .showHelpAfterError()
    .addOption(new Option('--directory-url <url>', 'directory base URL').env('MESH_DIRECTORY_URL').default('http://localhost:8081'))
    .addOption(new Option('--dispatcher-url <url>', 'dispatcher base URL').env('MESH_DISPATCHER_URL').default('http://localhost:8080'))
    .addOption(
      new Option('--agents-url <url>', 'agents runtime base URL (its /ops endpoints)')
        .env('MESH_AGENTS_URL')
        .default('http://localhost:8082'),
    )
    .addOption(new Option('--token <token>', 'API key or JWT for the directory and dispatcher').env('MESH_TOKEN'))
    .addOption(new Option('--ops-token <token>', 'bearer token of the agents /ops endpoints (AGENTS_OPS_TOKEN)').env('MESH_OPS_TOKEN'))
    .addOption(new Option('--brokers <list>', 'Kafka brokers host:port[,…]').env('KAFKA_BROKERS').default('localhost:9092'))
    .addOption(new Option('--prefix <prefix>', 'topic prefix of the installation').env('TOPIC_PREFIX').default(''))
    .option('--json', 'machine-readable output (one JSON document)')
    .configureOutput({
      writeOut: (s) => io.out(s.trimEnd()),
      // Under --json, runCli prints a usage error as one JSON document instead of commander's text and help.
      writeErr: (s) => {
        if (!jsonRequested) io.err(s.trimEnd());
      },
    })
    .exitOverride();
  const g = () => program.opts<Globals>();
  const kafka = (): KafkaTarget => ({
    brokers: g()
      .brokers.split(',')
      .map((b) => b.trim())
      .filter(Boolean),
    prefix: g().prefix,
  });
  const print = (json: unknown, human: () => string[]) => {
    if (g().json) io.out(JSON.stringify(json, null, 2));
    else for (const l of human()) io.out(terminalSafe(l));
  };
  // Progress goes to stderr, so stdout keeps only the result (or the one JSON document).
  const progress = (line: string) => io.err(terminalSafe(`${new Date().toISOString().slice(11, 19)}  ${line}`));
  const directoryAgentIds = async () => (await directory<{ items: AgentView[] }>('/v1/agents?limit=100')).items.map((a) => a.id);
  const directory = <T>(path: string, init: { method?: string; body?: unknown } = {}) =>
    requestJson<T>('directory', g().directoryUrl, path, { ...init, credential: 'token', ...(g().token ? { token: g().token } : {}) });
  const ops = <T>(path: string, init: { method?: string; body?: unknown } = {}) =>
    requestJson<T>('agents runtime', g().agentsUrl, `/ops${path}`, {
      ...init,
      credential: 'opsToken',
      ...(g().opsToken ? { token: g().opsToken } : {}),
    });
  const agentLine = (a: AgentView) =>
    `${a.id.padEnd(28)} ${(a.retired ? 'retired' : a.healthy ? 'healthy' : 'no heartbeat').padEnd(13)} v${a.version}  ${a.visibility.padEnd(8)} ${a.card?.name ?? ''}`;

  // ── agents ─────────────────────────────────────────────────────────────────
  const agents = program.command('agents').description('the agent directory');
  agents
    .command('list')
    .description('agents visible to you')
    .option('--include-retired', 'also retired agents')
    .option('--healthy', 'only agents with a live heartbeat')
    .action(async (o: { includeRetired?: boolean; healthy?: boolean }) => {
      const q = new URLSearchParams({
        limit: '100',
        ...(o.includeRetired ? { includeRetired: 'true' } : {}),
        ...(o.healthy ? { healthy: 'true' } : {}),
      });
      const page = await directory<{ items: AgentView[] }>(`/v1/agents?${q}`);
      print(page, () => (page.items.length ? page.items.map(agentLine) : ['(no agents)']));
    });
  agents
    .command('search <text...>')
    .description('ranked search over names, descriptions and skills')
    .option('--skill <id>', 'only agents with this skill id')
    .option('--tag <tag>', 'only agents with this skill tag')
    .action(async (text: string[], o: { skill?: string; tag?: string }) => {
      const q = new URLSearchParams({
        q: text.join(' '),
        limit: '20',
        ...(o.skill ? { skill: o.skill } : {}),
        ...(o.tag ? { tag: o.tag } : {}),
      });
      const page = await directory<{ items: Array<AgentView & { rank?: number }> }>(`/v1/agents?${q}`);
      print(page, () => (page.items.length ? page.items.map(agentLine) : ['(no match)']));
    });
  agents
    .command('register <file>')
    .description('register an agent from a JSON file (the directory registration body)')
    .action(async (file: string) => {
      let body: unknown;
      try {
        body = JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        throw new CliError(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`, ExitCode.usage);
      }
      const a = await directory<AgentView>('/v1/agents', { method: 'POST', body });
      print(a, () => [`registered ${a.id} v${a.version}`]);
    });
  agents
    .command('retire <id>')
    .description('retire an agent (its card is no longer served; tasks in flight finish)')
    .action(async (id: string) => {
      const a = await directory<AgentView>(`/v1/agents/${encodeURIComponent(id)}`, { method: 'DELETE' });
      print(a, () => [`retired ${a.id}`]);
    });

  // ── tasks ──────────────────────────────────────────────────────────────────
  const tasks = program.command('tasks').description('tasks through the dispatcher (official A2A client)');
  const client = async (agent: string, via?: (f: typeof fetch) => typeof fetch) =>
    (await a2a()).agentClient(g().dispatcherUrl, agent, g().token, via);
  const showTask = async (t: Task) => {
    const s = (await a2a()).taskSummary(t);
    print(s, () => [
      `${s.id}  ${s.state}${s.message ? `  ${s.message}` : ''}`,
      ...s.artifacts.map((a) => `  artifact ${(a as { name: string }).name}: ${(a as { text: string }).text}`),
    ]);
  };
  tasks
    .command('send <agent> <text...>')
    .description('send a message; waits for the task to settle unless --no-wait')
    .option('--task <id>', 'continue this task (multi-turn)')
    .option('--context <id>', 'context id')
    .option('--no-wait', 'return as soon as the task is accepted')
    .option('--interval <ms>', 'how often to check the task while waiting', positive, 500)
    .option('--timeout <ms>', 'give up waiting after this long', positive, 600000)
    .action(
      async (agent: string, text: string[], o: { task?: string; context?: string; wait: boolean; interval: number; timeout: number }) => {
        const { a2aError, textMessage } = await a2a();
        const c = await client(agent);
        // Accepted first, then followed: the wait reports each state on stderr instead of a silent block.
        const res = await c
          .sendMessage(
            textMessage(text.join(' '), { ...(o.task ? { taskId: o.task } : {}), ...(o.context ? { contextId: o.context } : {}) }, false),
          )
          .catch((e: unknown) => {
            throw a2aError(e);
          });
        if (!('status' in res)) return print(res, () => [JSON.stringify(res)]);
        const accepted = res as Task;
        if (!o.wait) return showTask(accepted);
        progress(`sent to ${agent}: task ${accepted.id}`);
        const { followTask } = await import('./task-progress.js');
        const final = await followTask(c, accepted.id, {
          intervalMs: o.interval,
          timeoutMs: o.timeout,
          stream: false,
          progress: (state, msg) => progress(`${state}${msg ? `  ${msg}` : ''}`),
        });
        await showTask(final);
      },
    );
  tasks
    .command('get <agent> <taskId>')
    .description('one task with its state, message and artifacts')
    .action(async (agent: string, id: string) => {
      const { a2aError } = await a2a();
      const t = await (await client(agent)).getTask({ tenant: '', id }).catch((e: unknown) => {
        throw a2aError(e);
      });
      await showTask(t);
    });
  tasks
    .command('list <agent>')
    .description('your recent tasks of an agent, newest first, a page at a time')
    .option('--state <state>', 'only this state (e.g. working, completed, input-required)')
    .option('--page-size <n>', 'tasks per page', positive, 20)
    .addOption(new Option('--limit <n>', 'same as --page-size').argParser(positive).hideHelp())
    .option('--page-token <token>', 'the page after the one that printed this token')
    .action(async (agent: string, o: { state?: string; pageSize: number; limit?: number; pageToken?: string }) => {
      const { a2aError, parseStateOption, taskSummary } = await a2a();
      const status = o.state ? parseStateOption(o.state) : 0;
      const res = await (
        await client(agent)
      )
        .listTasks({
          tenant: '',
          contextId: '',
          status,
          pageSize: o.limit ?? o.pageSize,
          pageToken: o.pageToken ?? '',
          statusTimestampAfter: undefined,
        })
        .catch((e: unknown) => {
          throw a2aError(e);
        });
      const rows = res.tasks.map(taskSummary);
      print({ tasks: rows, nextPageToken: res.nextPageToken }, () => [
        ...(rows.length ? rows.map((s) => `${(s.updated ?? '').padEnd(24)} ${s.id}  ${s.state.padEnd(15)} ${s.message}`) : ['(no tasks)']),
        ...(res.nextPageToken ? [`next page: --page-token ${res.nextPageToken}`] : []),
      ]);
    });
  tasks
    .command('cancel <agent> <taskId>')
    .description('cancel a task')
    .action(async (agent: string, id: string) => {
      const { a2aError } = await a2a();
      const t = await (await client(agent)).cancelTask({ tenant: '', id, metadata: undefined }).catch((e: unknown) => {
        throw a2aError(e);
      });
      await showTask(t);
    });
  tasks
    .command('watch <agent> <taskId>')
    .description('follow a task until it settles (stream, resumed with Last-Event-ID after a drop; falls back to polling)')
    .option('--interval <ms>', 'poll interval when streaming is not available', positive, 1000)
    .option('--timeout <ms>', 'give up after this long', positive, 600000)
    .action(async (agent: string, id: string, o: { interval: number; timeout: number }) => {
      const { StreamResumption } = await import('@mesh/agent-sdk');
      let resumption: InstanceType<typeof StreamResumption> | undefined;
      const c = await client(agent, (authorized) => (resumption = new StreamResumption(authorized)).fetch);
      const { followTask } = await import('./task-progress.js');
      const final = await followTask(c, id, {
        intervalMs: o.interval,
        timeoutMs: o.timeout,
        stream: true,
        progress: (state, text) => progress(`${state}${text ? `  ${text}` : ''}`),
        artifact: (name) => io.err(terminalSafe(`  artifact ${name}`)),
        ...(resumption ? { resumption } : {}),
        reconnecting: (r) =>
          progress(`stream dropped; reconnecting in ${r.delayMs} ms${r.lastEventId !== undefined ? ` after event ${r.lastEventId}` : ''}`),
      });
      await showTask(final);
    });

  // ── lag ────────────────────────────────────────────────────────────────────
  program
    .command('lag [agents...]')
    .description('consumer lag of agents (all agents in the directory when none is named), from the broker')
    .option('--by-tenant', 'also show turns in flight per tenant (from the agents runtime)')
    .action(async (ids: string[], o: { byTenant?: boolean }) => {
      const agentIds = ids.length ? ids : await directoryAgentIds();
      const rows = await (await kafkaOps()).agentLag(kafka(), agentIds);
      const tenants = o.byTenant ? (await ops<OpsWorkers>('/workers')).agents : undefined;
      print({ agents: rows, ...(tenants ? { inFlightByTenant: tenants } : {}) }, () => [
        ...rows.map(
          (r) =>
            `${r.agentId.padEnd(28)} lag ${String(r.lag).padStart(7)}   ${r.partitions.map((p) => `p${p.partition}:${p.lag}`).join(' ')}`,
        ),
        ...(tenants ?? []).map((t) => `${t.agentId.padEnd(28)} in flight by tenant: ${JSON.stringify(t.inFlightByTenant)}`),
      ]);
    });

  // ── workers ────────────────────────────────────────────────────────────────
  program
    .command('workers [agents...]')
    .description(
      'worker-group members, partition assignment, lag per partition and last heartbeat (all agents in the directory when none is named)',
    )
    .option('--in-flight', 'also turns in flight per agent, from the agents runtime at --agents-url (that one replica)')
    .action(async (ids: string[], o: { inFlight?: boolean }) => {
      const agentIds = ids.length ? ids : await directoryAgentIds();
      const rows = await (await kafkaOps()).agentWorkers(kafka(), agentIds);
      // The heartbeat and in-flight views come from HTTP services: one that fails is reported, the broker's view still shown.
      const problems: string[] = [];
      const heartbeats = await Promise.all(
        agentIds.map((id) =>
          directory<{ lastHeartbeatAt?: string | null }>(`/v1/agents/${encodeURIComponent(id)}`).then(
            (a) => a.lastHeartbeatAt ?? null,
            (err: unknown) => {
              // Not in the directory (or not visible to this token): no heartbeat to show.
              if (!(err instanceof CliError && err.code === 'not_found')) problems.push(describeFailure(err, g()));
              return null;
            },
          ),
        ),
      );
      let inFlight: Map<string, number> | undefined;
      if (o.inFlight) {
        const w = await ops<OpsWorkers>('/workers').catch((err: unknown) => {
          problems.push(describeFailure(err, g()));
          return undefined;
        });
        if (w) inFlight = new Map(w.agents.map((a) => [a.agentId, a.turnsInFlight]));
      }
      const agentsOut = rows.map((r, i) => ({
        ...r,
        lastHeartbeatAt: heartbeats[i] ?? null,
        ...(inFlight ? { turnsInFlight: inFlight.get(r.agentId) ?? 0 } : {}),
      }));
      print({ agents: agentsOut, ...(problems.length ? { problems } : {}) }, () => [
        ...agentsOut.flatMap((r) => [
          [
            `${r.agentId}  ${r.state}  ${r.members.length} member(s)  lag ${r.lag}`,
            ...(r.turnsInFlight !== undefined ? [`in flight ${r.turnsInFlight}`] : []),
            `last heartbeat ${r.lastHeartbeatAt ?? '-'}`,
            ...(r.lagWithoutConsumer ? ['! LAG WITH NO CONSUMER'] : []),
          ].join('  '),
          ...r.members.map((m) => `  member ${m.clientId}@${m.host}  partitions ${m.partitions.join(',') || '-'}  (${m.memberId})`),
          ...r.partitions.map(
            (p) =>
              `  p${p.partition}  lag ${String(p.lag).padStart(6)}  committed ${p.committed ?? '-'}  ${p.memberId ? `read by ${p.memberId}` : 'unassigned'}`,
          ),
        ]),
        ...problems.map((p) => `(${p})`),
      ]);
    });

  // ── dead letters ───────────────────────────────────────────────────────────
  const dl = program.command('dead-letters').description('dead-letter topics ({topic}.dlq)');
  const dlqOf = async (topicOrAgent: string) => (await kafkaOps()).deadLetterTopicOf(g().prefix, topicOrAgent);
  const deadLetterLine = (r: {
    partition: number;
    offset: string;
    errorCode: string | null;
    error: string | null;
    source: string | null;
    attempts: number | null;
  }) => `p${r.partition}@${r.offset}  ${r.errorCode ?? ''}  ${r.error ?? ''}  (from ${r.source ?? '?'}, ${r.attempts ?? '?'} attempts)`;
  dl.command('list <topicOrAgent>')
    .description('records in a dead-letter topic (an agent id means its command topic); replayed ones are marked')
    .option('--limit <n>', 'at most this many', positive, 100)
    .action(async (target: string, o: { limit: number }) => {
      const topic = await dlqOf(target);
      const rows = await (await kafkaOps()).listDeadLetters(kafka(), topic, o.limit);
      print({ topic, deadLetters: rows }, () =>
        rows.length ? rows.map((r) => `${deadLetterLine(r)}${r.replayed ? '  [replayed]' : ''}`) : [`(no dead letters in ${topic})`],
      );
    });
  dl.command('replay <topicOrAgent>')
    .description('send the dead letters present now (and not replayed before) back to their source topic')
    .option('--limit <n>', 'at most this many', positive)
    .option('--timeout <ms>', 'give up waiting after this long', positive, 60000)
    .option('--dry-run', 'list what would be replayed and send nothing')
    .action(async (target: string, o: { limit?: number; timeout: number; dryRun?: boolean }) => {
      const ops = await kafkaOps();
      const topic = await dlqOf(target);
      if (o.dryRun) {
        const plan = await ops.replayPlan(kafka(), topic, o.limit);
        return print({ topic, dryRun: true, wouldReplay: plan }, () => [
          ...plan.map(deadLetterLine),
          `would replay ${plan.length} record(s) from ${topic} (dry run: nothing sent)`,
        ]);
      }
      progress(`replaying ${topic} …`);
      const n = await ops.replay(kafka(), topic, {
        ...(o.limit !== undefined ? { limit: o.limit } : {}),
        timeoutMs: o.timeout,
        onProgress: (sent, total) => progress(`sent ${sent}/${total}`),
      });
      print({ topic, replayed: n }, () => [`replayed ${n} record(s) from ${topic}`]);
    });

  // ── unknown outcomes ───────────────────────────────────────────────────────
  const unk = program.command('unknowns').description('side-effecting tool calls whose outcome is unknown');
  unk
    .command('list')
    .description('open unknown outcomes, oldest first')
    .action(async () => {
      const r = await ops<OpsUnknowns>('/unknowns');
      print(r, () =>
        r.unknowns.length
          ? r.unknowns.map((u) => `${u.key}  ${u.tool}  task ${u.taskId} (${u.tenant})  ${u.reason ?? ''}`)
          : ['(no unknown outcomes)'],
      );
    });
  unk
    .command('resolve <key>')
    .description('settle one by hand after checking the target system')
    .addOption(
      new Option(
        '--state <state>',
        Object.entries(RESOLUTIONS)
          .map(([state, meaning]) => `${state}: ${meaning}`)
          .join('; '),
      )
        .choices(Object.keys(RESOLUTIONS))
        .makeOptionMandatory(),
    )
    .option('--text <text>', 'the result text the agent will see')
    .action(async (key: string, o: { state: string; text?: string }) => {
      const r = await ops<OpsResolved>(`/unknowns/${encodeURIComponent(key)}/resolve`, {
        method: 'POST',
        body: { state: o.state, ...(o.text ? { text: o.text } : {}) },
      });
      print(r, () => [`resolved ${r.key} as ${r.state}`]);
    });

  // ── console ────────────────────────────────────────────────────────────────
  program
    .command('console')
    .description(
      'serve the operator console on this machine: agents, lag charts, tasks and their detail, workers, dead letters, unknowns, actions',
    )
    .option('--port <n>', 'port to listen on (0: any free port)', port, 8090)
    .option('--host <host>', 'address to bind (it shows what your tokens may see: keep it local)', '127.0.0.1')
    .addOption(
      new Option(
        '--start-timeout <ms>',
        "the dispatcher's DISPATCHER_START_TIMEOUT_MS: warn of submitted tasks past their start-by (0: off)",
      )
        .env('DISPATCHER_START_TIMEOUT_MS')
        .argParser(nonNegative)
        .default(86_400_000),
    )
    .option('--sample-interval <ms>', 'how often the lag and throughput charts are sampled', positive, 5000)
    .action(async (o: { port: number; host: string; startTimeout: number; sampleInterval: number }) => {
      const { startConsole } = await import('./console/console-server.js');
      const c = await startConsole(
        {
          directoryUrl: g().directoryUrl,
          dispatcherUrl: g().dispatcherUrl,
          agentsUrl: g().agentsUrl,
          ...(g().token ? { token: g().token } : {}),
          ...(g().opsToken ? { opsToken: g().opsToken } : {}),
          ...kafka(),
          startTimeoutMs: o.startTimeout,
        },
        { port: o.port, host: o.host, sampleIntervalMs: o.sampleInterval },
      );
      io.err(`operator console on ${c.url} (Ctrl-C to stop)`);
      await new Promise<void>((resolve) => process.once('SIGINT', resolve).once('SIGTERM', resolve));
      await c.stop();
    });

  return program;
}

/** Runs `mesh` with `argv` (without node and script) and returns the exit code; never exits the process. */
export async function runCli(argv: string[], io: CliIo = processIo): Promise<number> {
  // Known before parsing, so a usage error (which stops the parse) is reported as JSON too.
  const json = argv.includes('--json');
  const program = buildProgram(io, json);
  const fail = (exitCode: number, code: string, message: string) => {
    if (json) io.out(JSON.stringify({ error: { code, message } }));
    else io.err(terminalSafe(`mesh: ${message}`));
    return exitCode;
  };
  try {
    await program.parseAsync(argv, { from: 'user' });
    return ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else is a usage error (commander printed it unless --json).
      if (err.exitCode === 0) return ExitCode.ok;
      // A command group without its subcommand: commander shows the help, its error says "(outputHelp)".
      const message =
        err.code === 'commander.help' ? 'a subcommand is required: see `mesh <command> --help`' : err.message.replace(/^error: /, '');
      return json ? fail(ExitCode.usage, 'usage', message) : ExitCode.usage;
    }
    if (err instanceof CliError) return fail(err.exitCode, err.code, err.message + credentialHint(err, program.opts<Globals>()));
    if (json) return fail(ExitCode.failed, 'failed', err instanceof Error ? err.message : String(err));
    return fail(ExitCode.failed, 'failed', `unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  }
}
