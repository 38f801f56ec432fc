import type { Producer } from 'kafkajs';
import { childTaskId, encodeEnvelope, Envelopes, type TaskRunCommand, type TopicNames } from '@mesh/contract';
import { eventually, sql } from './infra.js';
import type { ManualWorker } from './manual-worker.js';

/**
 * Makes a task of the manual worker `parent` delegate `n` children to agent `child` (its turn
 * reports the delegation as a worker's final event does): the parent's id and the children's
 * derived ids, sorted, once the dispatcher recorded the wait.
 */
export async function delegateFrom(
  opts: { databaseUrl: string; topics: TopicNames; producer: Producer; parent: ManualWorker; child: string },
  parentTaskId: string,
  n: number,
): Promise<{ parent: string; children: string[] }> {
  const run: TaskRunCommand = await opts.parent.run(parentTaskId);
  const children = Array.from({ length: n }, (_, step) => {
    const parts = [{ text: `part ${step}` }];
    return { step, agentId: opts.child, parts, taskId: childTaskId(run.identity.executionId, step, { agentId: opts.child, parts }) };
  });
  const events = [
    Envelopes.status(run.identity, { seq: 1, state: 'TASK_STATE_WORKING', final: false }),
    Envelopes.status(run.identity, { seq: 2, state: 'TASK_STATE_WORKING', final: true, delegation: { join: 'all', children } }),
  ];
  await opts.producer.send({
    topic: opts.topics.events(),
    acks: -1,
    messages: events.map((e) => ({ key: parentTaskId, ...encodeEnvelope(e) })),
  });
  await eventually('the delegation recorded', async () => {
    const rows = await sql(opts.databaseUrl, `SELECT 1 FROM dispatcher.delegations WHERE parent_task_id = $1`, [parentTaskId]);
    return rows.length === 1;
  });
  return { parent: parentTaskId, children: children.map((c) => c.taskId).sort() };
}
