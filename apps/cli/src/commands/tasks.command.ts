import { Option, type Command } from 'commander';
import type { Task } from '@a2a-js/sdk';
import { terminalSafe } from '../terminal-text.js';
import type { CliContext } from './cli.context.js';
import { positive } from './option.parsers.js';

// The A2A SDK loads inside the actions that use it: `mesh --help` starts without it.
const a2a = () => import('../a2a-client.js');

/** `mesh tasks`: tasks through the dispatcher, with the official A2A client. */
export function registerTasksCommand(program: Command, { io, globals: g, print, progress }: CliContext): void {
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
        const { followTask } = await import('../task-progress.js');
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
      const { followTask } = await import('../task-progress.js');
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
}
