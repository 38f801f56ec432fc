/**
 * Kafka header names of the message contract (docs/contract.md §4.1). Every command and event carries
 * the identity headers; consumers read identity from headers, never from the payload alone.
 */
export const Headers = {
  tenant: 'tenant',
  agentId: 'agent_id',
  taskId: 'task_id',
  contextId: 'context_id',
  messageId: 'message_id',
  executionId: 'execution_id',
  subject: 'subject',
  actor: 'actor',
  deadlineUnixMs: 'deadline_unix_ms',
  /** On `task.run` only: a worker that reads the command after this time does not start the turn. */
  startByUnixMs: 'start_by_unix_ms',
  /** On tasks delegated by another task: the delegating task, and the task tree's root. */
  parentTaskId: 'parent_task_id',
  rootTaskId: 'root_task_id',
  /** RFC 8693 actor chain as JSON (`{"sub":…,"act":{…}}`): who acts, for whom; grows with each delegation. */
  act: 'act',
  /** Space-separated scopes the task acts with; a delegated task's only narrow. */
  scope: 'scope',
  /** On `task.run` of a task tree: retries (takeovers, tool retries) the tree has left. */
  retryBudget: 'retry_budget',
  /** On `task.run` only: the dispatcher's signed grant (JWT) the worker exchanges for tool tokens. */
  grant: 'grant',
  traceparent: 'traceparent',
  tracestate: 'tracestate',
  /** Discriminator of the envelope kind, e.g. `task.run`. */
  kind: 'kind',
  /** Envelope schema version, so a consumer can refuse what it does not understand. */
  schemaVersion: 'schema_version',
  /**
   * On the team events topic only: a detached compact JWS (EdDSA, header `kid`) over the RFC 8785
   * canonical JSON of the envelope as decoded (docs/bus.md, "Team events").
   */
  signature: 'signature',
} as const;

export type HeaderName = (typeof Headers)[keyof typeof Headers];

/** Headers every envelope must carry; `traceparent`, `deadline_unix_ms` and `start_by_unix_ms` are optional. */
export const REQUIRED_HEADERS: readonly HeaderName[] = [
  Headers.tenant,
  Headers.agentId,
  Headers.taskId,
  Headers.contextId,
  Headers.messageId,
  Headers.executionId,
  Headers.subject,
  Headers.actor,
  Headers.kind,
  Headers.schemaVersion,
];
