import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { CliError, ExitCode } from './cli-error.js';

/**
 * The official A2A client for one agent behind the dispatcher, discovered from its card; `via`
 * wraps its fetch (a StreamResumption, for a stream that resumes after a dropped connection).
 */
export async function agentClient(
  dispatcherUrl: string,
  agentId: string,
  token: string | undefined,
  via?: (authorized: typeof fetch) => typeof fetch,
): Promise<Client> {
  const authorized: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const fetchImpl = via ? via(authorized) : authorized;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  try {
    return await factory.createFromUrl(`${dispatcherUrl.replace(/\/$/, '')}/a2a/${agentId}/`);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    if (cause || /fetch failed|ECONNREFUSED/.test(msg))
      throw new CliError(`cannot reach the dispatcher at ${dispatcherUrl}: ${cause ?? msg}`, ExitCode.unreachable);
    // A card fetch with a token the dispatcher refused (the card itself needs none).
    if (/\b401\b/.test(msg))
      throw new CliError(`agent ${agentId}: the dispatcher refused the token (401) on its agent card`, ExitCode.failed, undefined, 'token');
    // The SDK says "Failed to fetch Agent Card … 404": the dispatcher routes no such agent for this caller.
    if (/\b404\b/.test(msg))
      throw new CliError(
        `unknown agent ${agentId}: the dispatcher has no agent card for it (not registered, retired, or not visible to your token)`,
        ExitCode.failed,
        'not_found',
      );
    throw new CliError(`agent ${agentId}: ${msg}`);
  }
}

/** A text message in the A2A 1.0 shape the SDK expects. */
export function textMessage(text: string, ids: { taskId?: string; contextId?: string }, wait: boolean) {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      contextId: ids.contextId ?? '',
      taskId: ids.taskId ?? '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { acceptedOutputModes: [], returnImmediately: !wait, taskPushNotificationConfig: undefined },
    metadata: undefined,
  };
}

/** `TASK_STATE_INPUT_REQUIRED` → `input-required`. */
export function stateName(s: TaskState | undefined): string {
  const name = TaskState[s ?? TaskState.TASK_STATE_UNSPECIFIED] ?? 'TASK_STATE_UNSPECIFIED';
  return name
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-');
}

export const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** The `--state` values `tasks list` accepts: every A2A task state but the unspecified one. */
export const TASK_STATE_NAMES = Object.values(TaskState)
  .filter((v): v is TaskState => typeof v === 'number' && v > TaskState.TASK_STATE_UNSPECIFIED)
  .map(stateName);

/** `input-required` → `TASK_STATE_INPUT_REQUIRED`; a usage error naming the valid values otherwise. */
export function parseStateOption(value: string): TaskState {
  const key = `TASK_STATE_${value.toUpperCase().replace(/-/g, '_')}` as keyof typeof TaskState;
  const state = TaskState[key];
  if (typeof state !== 'number' || state === TaskState.TASK_STATE_UNSPECIFIED)
    throw new CliError(`unknown state ${value}; valid states: ${TASK_STATE_NAMES.join(', ')}`, ExitCode.usage);
  return state;
}

/** A message's or artifact's text and data parts as one line (parts apart by a space). */
export const partsText = (parts: Array<{ content?: { $case: string; value: unknown } }> = []): string =>
  parts
    .map((p) =>
      p.content?.$case === 'text' ? String(p.content.value) : p.content?.$case === 'data' ? JSON.stringify(p.content.value) : '',
    )
    .filter((t) => t !== '')
    .join(' ');

/** The texts of a task's status message and artifacts, for a human. */
export function taskSummary(t: Task): {
  id: string;
  contextId: string;
  state: string;
  /** When the task entered its current state (ISO 8601), as the agent recorded it. */
  updated: string | null;
  message: string;
  artifacts: unknown[];
} {
  return {
    id: t.id,
    contextId: t.contextId,
    state: stateName(t.status?.state),
    updated: t.status?.timestamp ?? null,
    message: partsText(t.status?.message?.parts as never),
    artifacts: (t.artifacts ?? []).map((a) => ({ name: a.name, text: partsText(a.parts as never) })),
  };
}

/** Turns SDK errors (A2A error codes) into one line. */
export function a2aError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  if (/fetch failed|ECONNREFUSED/.test(msg)) return new CliError(`cannot reach the dispatcher: ${msg}`, ExitCode.unreachable);
  // The dispatcher's 401 (docs/dispatcher.md): the SDK hands on its message only.
  if (/^authentication (required|refused)/.test(msg)) return new CliError(`dispatcher: ${msg}`, ExitCode.failed, undefined, 'token');
  // TaskNotFound (-32001 / 404): the thing does not exist, for scripts as for people.
  if (/^Task not found\b/.test(msg)) return new CliError(`dispatcher: ${msg}`, ExitCode.failed, 'not_found');
  return new CliError(`dispatcher: ${msg}`);
}
