import { Role, type Task } from '@a2a-js/sdk';
import type { EffectRecord, ExecutionRecord, OpsTaskDetail } from '@mesh/contract';
import { partsText, taskSummary } from '../a2a-client.js';
import { CliError, ExitCode } from '../cli-error.js';
import { messageOf, type ConsoleClients } from './console-clients.js';

/** The task detail page: the dispatcher's task (history, artifacts) and the agents' ledgers (attempts, side effects). */
export interface TaskDetail {
  agent: string;
  id: string;
  tenant: string | null;
  contextId: string | null;
  state: string | null;
  updated: string | null;
  message: string;
  history: Array<{ role: string; messageId: string; text: string }>;
  artifacts: Array<{ name: string; text: string }>;
  executions: ExecutionRecord[];
  effects: EffectRecord[];
  /** The trace of the latest turn that ran under one (open it in the tracing UI). */
  traceId: string | null;
  /** Its place in a task tree (delegation): the task that delegated it and those it delegated. */
  tree: TaskTree;
  problems: string[];
}

/** A task's links in its tree, from the task metadata the dispatcher keeps (docs/agents.md, "Delegation"). */
export interface TaskTree {
  parent: { agent: string; id: string } | null;
  rootId: string | null;
  children: Array<{ step: number; agent: string | null; id: string; state: string | null }>;
}

type Child = { taskId?: unknown; agentId?: unknown; step?: unknown };

/** The tree links of `task`, each child's state read with GetTask (refused or unknown: null). */
async function treeOf(c: ConsoleClients, task: Task | undefined): Promise<TaskTree> {
  const meta = (task?.metadata ?? {}) as Record<string, unknown>;
  const parent = meta['mesh/parent'] as Child | undefined;
  const listed = Array.isArray(meta['mesh/children']) ? (meta['mesh/children'] as Child[]) : [];
  const children = await Promise.all(
    listed
      .filter((x) => typeof x.taskId === 'string')
      .map(async (x) => {
        const agent = typeof x.agentId === 'string' ? x.agentId : null;
        const id = x.taskId as string;
        const child = agent
          ? await c
              .client(agent)
              .then((cl) => cl.getTask({ tenant: '', id, historyLength: 0 }))
              .catch(() => undefined)
          : undefined;
        return { step: typeof x.step === 'number' ? x.step : 0, agent, id, state: child ? (taskSummary(child).state ?? null) : null };
      }),
  );
  return {
    parent:
      parent && typeof parent.taskId === 'string' && typeof parent.agentId === 'string'
        ? { agent: parent.agentId, id: parent.taskId }
        : null,
    rootId: typeof meta['mesh/root_task_id'] === 'string' ? meta['mesh/root_task_id'] : null,
    children,
  };
}

/**
 * Gathers a task's detail. The dispatcher answers for tasks the console's caller token may see;
 * the ledgers (with the ops token) for any tenant's. Either alone is shown; neither: a not_found CliError.
 */
export async function taskDetail(c: ConsoleClients, agent: string, id: string): Promise<TaskDetail> {
  const problems: string[] = [];
  const [task, ledger] = await Promise.all([
    c
      .client(agent)
      .then((cl) => cl.getTask({ tenant: '', id, historyLength: 100 }))
      .catch((err: unknown) => {
        problems.push(`dispatcher: ${messageOf(err)}`);
        return undefined;
      }) as Promise<Task | undefined>,
    c.ops
      ? c
          .opsRequest<OpsTaskDetail>(`/tasks/${encodeURIComponent(id)}`)
          // The ledgers know a task by id alone: one of another agent is not this page's task.
          .then((l) => (l.agentId === agent ? l : undefined))
          .catch((err: unknown) => {
            problems.push(`ledgers: ${messageOf(err)}`);
            return undefined;
          })
      : Promise.resolve(undefined),
  ]);
  if (!task && !ledger) throw new CliError(`no task ${id} of ${agent}: ${problems.join('; ')}`, ExitCode.failed, 'not_found');
  if (!c.ops) problems.push('no ops token: execution attempts and side effects are not shown');
  const s = task ? taskSummary(task) : undefined;
  const executions = ledger?.executions ?? [];
  return {
    agent,
    id,
    tenant: ledger?.tenant ?? null,
    contextId: s?.contextId ?? null,
    state: s?.state ?? null,
    updated: s?.updated ?? null,
    message: s?.message ?? '',
    history: (task?.history ?? []).map((m) => ({
      role: m.role === Role.ROLE_AGENT ? 'agent' : m.role === Role.ROLE_USER ? 'user' : 'unspecified',
      messageId: m.messageId,
      text: partsText(m.parts as never),
    })),
    artifacts: (task?.artifacts ?? []).map((a) => ({ name: a.name, text: partsText(a.parts as never) })),
    executions,
    effects: ledger?.effects ?? [],
    traceId: [...executions].reverse().find((e) => e.traceId)?.traceId ?? null,
    tree: await treeOf(c, task),
    problems,
  };
}
