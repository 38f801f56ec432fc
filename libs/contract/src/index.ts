export { Headers } from './headers.js';
export { isRetryable, anyCause, anyTransient, type MeshErrorCode, MeshError, type TransientErrorTest, type ErrorFacts } from './errors.js';
export { canonicalJson, argsHash } from './canonical-json.js';
export { newId, assertTenant, isAgentId, slugify, executionId, idempotencyKey, FIRST_TURN } from './ids.js';
export {
  TopicNames,
  ConsumerGroups,
  type TopicDefinition,
  DEFAULT_EVENTS_PARTITIONS,
  DEFAULT_COMMAND_PARTITIONS,
  TopicDefinitions,
} from './topics.js';
export { DEFAULT_CHANNEL_KEY_TEMPLATE, TENANT_CHANNEL_KEY_TEMPLATE, ChannelKey } from './channel-key.js';
export {
  parseTaskState,
  TaskStates,
  type TaskState,
  TERMINAL_TASK_STATES,
  INTERRUPTED_TASK_STATES,
  OPEN_TASK_STATES,
} from './task-state.js';
export {
  assertUnreachable,
  encodeEnvelope,
  normalizeHeaders,
  decodeEnvelope,
  type Identity,
  type TaskRunCommand,
  type TaskCancelCommand,
  type Envelope,
  type TaskEvent,
  Envelopes,
} from './envelope.js';
export { type JsonObject, type JsonValue, isJsonObject } from './json-types.js';
export { canSee, type AgentVisibility, type AgentRecord, type AgentHeartbeat } from './agent-record.js';
export { clampTimerMs, deadlineTimerMs } from './timer-delay.js';
export { sleep, wakeableSleep } from './sleep.js';
export { onAbort } from './abort-waiters.js';
export { hasControlCharacter, hasLoneSurrogate } from './unicode-text.js';
export { BillingTools, type BillingAlreadyRefunded, type BillingInvoice, type BillingRefund } from './billing-tools.js';
export { RESUMABLE_STREAMS, RESUMABLE_STREAMS_URI, withPlatformExtensions, type PlatformExtension } from './extensions.js';
export { bearerToken } from './bearer.js';
export {
  LEDGER_TASK_STATES,
  isLedgerTaskState,
  type LedgerTaskState,
  OPS_TASKS_MAX_LIMIT,
  UNKNOWN_RESOLUTIONS,
  isUnknownResolution,
  type UnknownResolution,
  type OpsWorker,
  type OpsWorkers,
  type AgentLag,
  type OpsLag,
  type OpsUnknown,
  type OpsUnknowns,
  type OpsResolved,
  type LedgerTask,
  type OpsTasks,
  type ExecutionRecord,
  type EffectRecord,
  type OpsTaskDetail,
} from './ops-api.js';
export {
  DELEGATION_URI,
  DELEGATION_EXTENSION,
  DELEGATION_RESULTS_KEY,
  PLATFORM_MESSAGE_ID_PREFIX,
  PLATFORM_METADATA_PREFIX,
  reservedNameIn,
  MAX_DELEGATION_CHILDREN,
  MAX_ACTOR_CHAIN,
  childTaskId,
  actFor,
  actorChainDepth,
  parseActorClaim,
  narrowScopes,
  type DelegationJoin,
  type DelegationChild,
  type DelegationRequest,
  type TurnUsage,
  type ChildOutcome,
  type DelegationResults,
  type ActorClaim,
} from './delegation.js';
export { ToolGrants, type GrantClaims, agentActor } from './tool-grants.js';
