import { Role, type Task } from '@a2a-js/sdk';
import { taskSummary } from '../a2a-client.js';
import { CliError, ExitCode } from '../cli-error.js';
import { messageOf, type ConsoleClients } from './console-clients.js';

/** One execution (turn) of a task from the execution ledger (the agents runtime's `/ops/tasks/:id`). */
export interface ExecutionView {
  executionId: string;
  turn: number;
  state: string;
  finalState: string | null;
  attempt: number;
  owner: string;
  canceled: boolean;
  traceId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** One tool call of a task from the effect ledger. */
export interface EffectView {
  key: string;
  executionId: string;
  tool: string;
  sideEffect: boolean;
  state: string;
  reason: string | null;
  attempts: number;
  result: string | null;
  updatedAt: string;
}

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
  executions: ExecutionView[];
  effects: EffectView[];
  /** The trace of the latest turn that ran under one (open it in the tracing UI). */
  traceId: string | null;
  problems: string[];
}

type LedgerTask = { tenant: string; agentId: string; executions: ExecutionView[]; effects: EffectView[] };

const partsText = (parts: Array<{ content?: { $case: string; value: unknown } }> = []) =>
  parts
    .map((p) =>
      p.content?.$case === 'text' ? String(p.content.value) : p.content?.$case === 'data' ? JSON.stringify(p.content.value) : '',
    )
    .join('');

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
      ? c.opsRequest<LedgerTask>(`/tasks/${encodeURIComponent(id)}`).catch((err: unknown) => {
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
    problems,
  };
}
