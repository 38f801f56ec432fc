import { TaskState, type Task } from '@a2a-js/sdk';
import { isLedgerTaskState, LEDGER_TASK_STATES, type OpsTasks, type OpsUnknown, type OpsUnknowns, type OpsWorkers } from '@mesh/contract';
import { parseStateOption, taskSummary, TASK_STATE_NAMES } from '../a2a-client.js';
import { CliError, ExitCode } from '../cli-error.js';
import { describeWorkers } from '../kafka-ops.js';
import { messageOf, type ConsoleClients } from './console-clients.js';
import { stuckWorkWarnings, type StuckWarning } from './stuck-work.js';
import { teamsAndRefusals, type TeamsAndRefusals } from './teams-refusals.js';

/** What narrows the task list; an unset field matches all. `tenant` reads the ledgers and needs the ops token. */
export interface TaskFilter {
  agent?: string;
  state?: string;
  tenant?: string;
}

/** A row of the task list. `tenant` is known when the list came from the ledgers (tenant filter). */
export interface TaskRow {
  agent: string;
  id: string;
  state: string;
  message: string;
  updated: string;
  tenant?: string;
}

/** Everything the overview page shows, gathered in one request; a failing source is reported, not fatal. */
export interface Overview {
  at: string;
  /** Whether the console holds an ops token: the tenant filter and actions depend on it. */
  ops: boolean;
  agents: Array<{
    id: string;
    name: string;
    healthy: boolean;
    retired: boolean;
    lag: number | null;
    members: number | null;
    inFlight: number | null;
    deadLetters: number | null;
  }>;
  tasks: TaskRow[];
  unknowns: OpsUnknown[];
  warnings: StuckWarning[];
  /** The dispatcher's team bindings and its refusals (events not believed, token exchanges denied). */
  teams: TeamsAndRefusals;
  problems: string[];
}

/**
 * The states the state filter accepts: A2A task states, `running` (a turn running now) and
 * `delegated` (a turn that handed its work to other agents), both ledger views.
 */
export const FILTER_STATES = [...TASK_STATE_NAMES, 'running', 'delegated'];

/** Checks a filter before anything is asked; a CliError (usage) names the valid values. */
export function checkFilter(f: TaskFilter, ops: boolean): void {
  if (f.state !== undefined && !FILTER_STATES.includes(f.state))
    throw new CliError(`unknown state ${f.state}; valid states: ${FILTER_STATES.join(', ')}`, ExitCode.usage);
  if (f.state === 'running' && f.tenant === undefined)
    throw new CliError('state running is a ledger view: give a tenant too (it needs the ops token)', ExitCode.usage);
  if (f.tenant !== undefined && !ops)
    throw new CliError('the tenant filter reads the ledgers across tenants: start the console with an ops token', ExitCode.usage);
  // The ledgers know a task by its latest turn: running, or that turn's outcome (no submitted or working).
  if (f.tenant !== undefined && f.state !== undefined && !isLedgerTaskState(f.state))
    throw new CliError(
      `state ${f.state} is not in the ledgers the tenant filter reads; valid states with a tenant: ${LEDGER_TASK_STATES.join(', ')}`,
      ExitCode.usage,
    );
}

const listRequest = (status: TaskState, pageSize: number) => ({
  tenant: '',
  contextId: '',
  status,
  pageSize,
  pageToken: '',
  statusTimestampAfter: undefined,
});

/** Builds overviews on the console's long-lived clients. */
export class OverviewSource {
  constructor(private readonly c: ConsoleClients) {}

  async overview(filter: TaskFilter = {}): Promise<Overview> {
    checkFilter(filter, this.c.ops);
    const problems: string[] = [];
    const soft = async <T>(what: string, p: Promise<T>): Promise<T | undefined> => {
      try {
        return await p;
      } catch (err) {
        problems.push(`${what}: ${messageOf(err)}`);
        return undefined;
      }
    };
    // Each source of the teams section is read apart: one unreachable, the section says so for it.
    const outcome = <T>(p: Promise<T>) =>
      p.then(
        (ok) => ({ ok }),
        (err: unknown) => ({ unavailable: messageOf(err) }),
      );
    const teamsSection = Promise.all([
      this.c.ops
        ? outcome(this.c.teams())
        : Promise.resolve({ unavailable: 'no ops token: the team bindings need the dispatcher ops token' }),
      outcome(this.c.dispatcherMetrics()),
    ]).then(([teams, metrics]) => teamsAndRefusals(teams, metrics));
    const [dir, workers, unknowns, ledgerTasks] = await Promise.all([
      soft('directory', this.c.agents()),
      this.c.ops ? soft('agents runtime', this.c.opsRequest<OpsWorkers>('/workers')) : Promise.resolve(undefined),
      this.c.ops ? soft('unknown outcomes', this.c.opsRequest<OpsUnknowns>('/unknowns')) : Promise.resolve(undefined),
      filter.tenant !== undefined
        ? soft('ledger tasks', this.c.opsRequest<OpsTasks>(`/tasks?${ledgerQuery(filter)}`))
        : Promise.resolve(undefined),
    ]);
    if (!this.c.ops) problems.push('no ops token: in-flight turns, unknown outcomes, the ledgers and actions are not available');
    const agents: Overview['agents'] = [];
    const tasks: TaskRow[] = [];
    const waiting: TaskRow[] = [];
    const lagWithoutConsumer: string[] = [];
    const status =
      filter.state !== undefined && filter.tenant === undefined ? parseStateOption(filter.state) : TaskState.TASK_STATE_UNSPECIFIED;
    await Promise.all(
      (dir ?? []).map(async (a) => {
        // Topics are checked first: asking the broker about one that does not exist makes kafkajs retry and log.
        const [group, dlq, listed, submitted] = await Promise.all([
          soft(`workers of ${a.id}`, describeWorkers(this.c.admin, this.c.targets.prefix, a.id)),
          soft(`dead letters of ${a.id}`, this.deadLetterCount(a.id)),
          a.retired || filter.tenant !== undefined || (filter.agent !== undefined && filter.agent !== a.id)
            ? Promise.resolve(undefined)
            : soft(
                `tasks of ${a.id}`,
                this.c.client(a.id).then((cl) => cl.listTasks(listRequest(status, 20))),
              ),
          a.retired || !this.c.targets.startTimeoutMs
            ? Promise.resolve(undefined)
            : soft(
                `submitted tasks of ${a.id}`,
                this.c.client(a.id).then((cl) => cl.listTasks(listRequest(TaskState.TASK_STATE_SUBMITTED, 50))),
              ),
        ]);
        if (group?.lagWithoutConsumer) lagWithoutConsumer.push(a.id);
        agents.push({
          id: a.id,
          name: a.card?.name ?? a.id,
          healthy: a.healthy,
          retired: a.retired,
          lag: group ? group.lag : null,
          members: group ? group.members.length : null,
          inFlight: workers?.agents.find((w) => w.agentId === a.id)?.turnsInFlight ?? null,
          deadLetters: dlq ?? null,
        });
        for (const t of listed?.tasks ?? []) tasks.push({ agent: a.id, ...row(t) });
        for (const t of submitted?.tasks ?? []) waiting.push({ agent: a.id, ...row(t) });
      }),
    );
    for (const t of ledgerTasks?.tasks ?? [])
      tasks.push({ agent: t.agentId, id: t.taskId, state: t.state, message: t.message ?? '', updated: t.updatedAt, tenant: t.tenant });
    agents.sort((x, y) => x.id.localeCompare(y.id));
    tasks.sort((x, y) => y.updated.localeCompare(x.updated));
    const warnings = stuckWorkWarnings({
      now: Date.now(),
      startTimeoutMs: this.c.targets.startTimeoutMs ?? 0,
      lagWithoutConsumer: agents.filter((a) => lagWithoutConsumer.includes(a.id)).map((a) => ({ agent: a.id, lag: a.lag ?? 0 })),
      submitted: waiting,
    });
    return {
      at: new Date().toISOString(),
      ops: this.c.ops,
      agents,
      tasks: tasks.slice(0, 100),
      unknowns: (unknowns?.unknowns ?? []).filter((u) => filter.tenant === undefined || u.tenant === filter.tenant),
      warnings,
      teams: await teamsSection,
      problems,
    };
  }

  /** Records in the agent's dead-letter topic; 0 while the topic does not exist (nothing was ever dead-lettered). */
  private async deadLetterCount(agent: string): Promise<number> {
    const topic = this.c.deadLetterTopic(agent);
    if (!(await this.c.admin.topicExists(topic))) return 0;
    return this.c.admin.recordCount(topic);
  }
}

function ledgerQuery(f: TaskFilter): URLSearchParams {
  return new URLSearchParams({
    limit: '100',
    ...(f.tenant !== undefined ? { tenant: f.tenant } : {}),
    ...(f.agent !== undefined ? { agent: f.agent } : {}),
    ...(f.state !== undefined ? { state: f.state } : {}),
  });
}

function row(t: Task): { id: string; state: string; message: string; updated: string } {
  const s = taskSummary(t);
  const ts = t.status?.timestamp as unknown;
  const updated = ts instanceof Date ? ts.toISOString() : typeof ts === 'string' ? ts : '';
  return { id: s.id, state: s.state, message: s.message, updated };
}
