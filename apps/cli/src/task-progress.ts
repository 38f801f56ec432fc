import type { Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { followTaskStream, type StreamResumption } from '@mesh/agent-sdk';
import { a2aError, stateName, taskSummary, TERMINAL } from './a2a-client.js';
import { CliError } from './cli-error.js';

/** How {@link followTask} waits and where it reports. */
export interface FollowOptions {
  intervalMs: number;
  timeoutMs: number;
  /** Try the task's stream first (falls back to polling when the agent or dispatcher has none). */
  stream: boolean;
  /** Called on each change of state or status text (the CLI writes it to stderr). */
  progress: (state: string, text: string) => void;
  /** Called for each artifact the stream announces. */
  artifact?: (name: string) => void;
  /**
   * The fetch the client was built over: with it a dropped stream is resumed (reconnect with
   * backoff, Last-Event-ID); without it a dropped stream falls back to polling.
   */
  resumption?: StreamResumption;
  /** Called before each reconnect of a dropped stream. */
  reconnecting?: (info: { attempt: number; delayMs: number; lastEventId?: string; error: unknown }) => void;
}

const settled = (t: Task) => TERMINAL.has(stateName(t.status?.state)) || stateName(t.status?.state) === 'input-required';

/** Follows a task until it is terminal or needs input, reporting its progress; resolves its last view. */
export async function followTask(c: Client, id: string, o: FollowOptions): Promise<Task> {
  const until = Date.now() + o.timeoutMs;
  let last = '';
  const report = (t: { state: string; message: string }) => {
    if (`${t.state}|${t.message}` === last) return;
    last = `${t.state}|${t.message}`;
    o.progress(t.state, t.message);
  };
  const get = () =>
    c.getTask({ tenant: '', id }).catch((e: unknown) => {
      throw a2aError(e);
    });
  let task = await get();
  report(taskSummary(task));
  if (settled(task)) return task;
  if (o.stream) {
    try {
      const events = o.resumption
        ? followTaskStream(c, id, o.resumption, {
            firstDelayMs: 500,
            maxDelayMs: 10_000,
            ...(o.reconnecting ? { onRetry: o.reconnecting } : {}),
          })
        : c.resubscribeTask({ tenant: '', id });
      for await (const ev of events) {
        const p = ev.payload;
        if (p?.$case === 'task') report(taskSummary(p.value));
        if (p?.$case === 'statusUpdate') {
          const s = taskSummary({ id, contextId: '', status: p.value.status, artifacts: [], history: [], metadata: undefined } as Task);
          report(s);
          if (TERMINAL.has(s.state)) break;
        }
        if (p?.$case === 'artifactUpdate') o.artifact?.(p.value.artifact?.name ?? '');
        if (Date.now() > until) break;
      }
    } catch {
      // No streaming on this agent or dispatcher (or reconnecting kept failing): poll instead.
    }
  }
  for (;;) {
    task = await get();
    report(taskSummary(task));
    if (settled(task)) return task;
    if (Date.now() > until) throw new CliError(`task ${id} did not settle within ${o.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, o.intervalMs));
  }
}
