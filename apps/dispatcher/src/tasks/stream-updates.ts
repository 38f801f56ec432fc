// The one builder of a task change as callers see it: the update a stream shows, the body a push
// webhook gets and what the task's event log stores are the same StreamResponse, whether the change
// is a worker event (projected) or one the dispatcher makes itself (CancelTask, a deadline).
import { Artifact, StreamResponse, type TaskArtifactUpdateEvent, type TaskStatus, type TaskStatusUpdateEvent } from '@a2a-js/sdk';
import type { TaskEvent } from '@mesh/contract';

/** A StreamResponse as JSON (what `task_events` and `push_deliveries` store). */
export type StreamEventJson = Record<string, unknown>;

/** A worker event as the update it is on the task's stream, with `status` as its status (status events). */
export function streamUpdateOf(
  event: TaskEvent,
  status: TaskStatus | undefined,
): { $case: 'statusUpdate'; value: TaskStatusUpdateEvent } | { $case: 'artifactUpdate'; value: TaskArtifactUpdateEvent } {
  const { taskId, contextId } = event.identity;
  if (event.kind === 'task.status') return { $case: 'statusUpdate', value: { taskId, contextId, status, metadata: undefined } };
  return {
    $case: 'artifactUpdate',
    value: {
      taskId,
      contextId,
      artifact: Artifact.fromJSON(event.body.artifact),
      append: event.body.append ?? false,
      lastChunk: event.body.lastChunk ?? false,
      metadata: undefined,
    },
  };
}

/** A worker event as the task's stream shows it (a StreamResponse as JSON); `status`: a status event's status as projected. */
export function streamEventOf(event: TaskEvent, status: TaskStatus | undefined): StreamEventJson {
  return StreamResponse.toJSON({ payload: streamUpdateOf(event, status) }) as StreamEventJson;
}

/** A status change the dispatcher makes itself (CancelTask, a deadline passing) as the task's stream shows it. */
export function statusChangeEventOf(taskId: string, contextId: string, status: TaskStatus): StreamEventJson {
  return StreamResponse.toJSON({
    payload: { $case: 'statusUpdate', value: { taskId, contextId, status, metadata: undefined } },
  }) as StreamEventJson;
}
