export {
  textOf,
  type Part,
  type PartAttributes,
  type AgentMessage,
  type AgentTask,
  type ToolIntent,
  type ToolResultObservation,
  type ToolUnknownObservation,
  type ToolObservation,
  type ArtifactInput,
  type TurnOutcome,
  SETTLED_TURN_STATES,
  type AgentContext,
  text,
  data,
  Outcomes,
} from './agent-task.js';
export {
  defineAgent,
  toolName,
  parseToolName,
  type StdioMcpServer,
  type HttpMcpServer,
  type McpServerSpec,
  type ChannelSettings,
  type AgentHandler,
  type AgentDefinition,
  type AgentDefinitionInput,
} from './agent-definition.js';
export type { JsonObject, JsonValue } from '@mesh/contract';
export {
  RESUMABLE_STREAMS_URI,
  StreamResumption,
  followTaskStream,
  isRetryableStreamError,
  type FollowStreamOptions,
} from './task-stream.js';
