import { randomUUID } from 'node:crypto';
import { Role, TaskState, type ListTasksRequest, type Message, type SendMessageRequest, type Task } from '@a2a-js/sdk';

/** A user text message in the SDK's (protobuf-shaped) types. */
export function userMessage(text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    contextId: '',
    taskId: '',
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

/** A SendMessage request around one message. */
export function sendRequest(
  message: Message,
  configuration: Partial<Omit<NonNullable<SendMessageRequest['configuration']>, 'acceptedOutputModes'>> = {},
): SendMessageRequest {
  return {
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], returnImmediately: false, taskPushNotificationConfig: undefined, ...configuration },
    metadata: undefined,
  };
}

/** A ListTasks request of every task the caller sees (the SDK's request type has no defaults). */
export const listRequest = (patch: Partial<ListTasksRequest> = {}): ListTasksRequest => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: 50,
  pageToken: '',
  historyLength: 0,
  includeArtifacts: false,
  statusTimestampAfter: undefined,
  ...patch,
});

/** The text of every artifact part of a task. */
export const artifactText = (task: Task) =>
  task.artifacts
    .flatMap((a) => a.parts)
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');

/** A user message as A2A 1.0 JSON (for raw HTTP requests). */
export const jsonMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: randomUUID(),
  role: 'ROLE_USER',
  parts: [{ text }],
  ...extra,
});

/** Starts a task of `agent` over JSON-RPC (returnImmediately) with a text message; its id. */
export async function submitTask(baseUrl: string, agent: string, text: string, token = 'demo-acme'): Promise<string> {
  const res = await fetch(`${baseUrl}/a2a/${agent}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: jsonMessage(text), configuration: { returnImmediately: true } },
    }),
  });
  const answer = (await res.json()) as { result?: { task: { id: string } } };
  if (!answer.result) throw new Error(`SendMessage to ${agent} was refused: ${JSON.stringify(answer)}`);
  return answer.result.task.id;
}
