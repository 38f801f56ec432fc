import { randomUUID } from 'node:crypto';
import type { AgentMessage, ArtifactInput, ChildResult, DelegationOutcome, Part, PartAttributes, TurnOutcome } from '@mesh/agent-sdk';
import {
  DELEGATION_RESULTS_KEY,
  isJsonObject,
  TaskStates,
  type DelegationResults,
  type JsonObject,
  type JsonValue,
  type TaskState,
} from '@mesh/contract';

/*
 * The one place that knows the A2A JSON shapes (A2A 1.0 as @a2a-js/sdk 1.x serialises it: parts
 * are `{text}` / `{data}` / `{url}` / `{raw}`, roles `ROLE_USER`/`ROLE_AGENT`, states `TASK_STATE_*`).
 * Incoming parts in the older `{kind: 'text', text}` form are accepted too. Agent code never sees these.
 */

/** Outcome state → A2A task state. */
export function wireStateOf(state: TurnOutcome['state']): TaskState {
  switch (state) {
    case 'completed':
      return TaskStates.completed;
    case 'failed':
      return TaskStates.failed;
    case 'canceled':
      return TaskStates.canceled;
    case 'rejected':
      return TaskStates.rejected;
    case 'input-required':
      return TaskStates.inputRequired;
    case 'auth-required':
      return TaskStates.authRequired;
    case 'delegated':
      // The task works on through its children; the turn is over.
      return TaskStates.working;
  }
}

const CHILD_STATES: Record<string, ChildResult['state']> = {
  [TaskStates.completed]: 'completed',
  [TaskStates.failed]: 'failed',
  [TaskStates.canceled]: 'canceled',
  [TaskStates.rejected]: 'rejected',
  [TaskStates.inputRequired]: 'input-required',
  [TaskStates.authRequired]: 'auth-required',
};

/**
 * The children's outcomes a resumed turn's message carries (a data part marked with
 * DELEGATION_RESULTS_KEY, written by the dispatcher); undefined on any other message.
 */
export function delegationOutcomeOf(json: JsonObject): DelegationOutcome | undefined {
  const parts = Array.isArray(json.parts) ? (json.parts as JsonObject[]) : [];
  const part = parts.find((p) => isJsonObject(p.metadata) && p.metadata[DELEGATION_RESULTS_KEY] === true && isJsonObject(p.data));
  if (!part) return undefined;
  const results = part.data as unknown as DelegationResults;
  return {
    reason: results.reason,
    unfinished: [...results.unfinished],
    children: results.children.map((c) => ({
      step: c.step,
      taskId: c.taskId,
      ...(c.agentId ? { agent: c.agentId } : {}),
      // A child still open when the wait ended was canceled by the platform.
      state: CHILD_STATES[c.state] ?? 'canceled',
      artifacts: c.artifacts.map(fromWireArtifact),
      ...(c.truncated ? { truncated: true as const } : {}),
      ...(c.message ? { message: fromWireMessage(c.message) } : {}),
    })),
  };
}

/** A2A artifact JSON → ArtifactInput (name, description, parts and metadata kept). */
export function fromWireArtifact(json: JsonObject): ArtifactInput {
  return {
    ...(typeof json.name === 'string' ? { name: json.name } : {}),
    ...(typeof json.description === 'string' ? { description: json.description } : {}),
    parts: fromWireMessage({ parts: json.parts ?? [] }).parts,
    ...(isJsonObject(json.metadata) ? { metadata: json.metadata } : {}),
  };
}

/** Parts as A2A JSON. */
export function toWireParts(parts: Part[]): JsonObject[] {
  return parts.map(toWirePart);
}

/** A2A message JSON → AgentMessage. Unknown part shapes are dropped rather than failing the task. */
export function fromWireMessage(json: JsonObject): AgentMessage {
  const rawParts = Array.isArray(json.parts) ? (json.parts as JsonObject[]) : [];
  const parts: Part[] = [];
  for (const p of rawParts) {
    const kind = typeof p.kind === 'string' ? p.kind : undefined;
    // A part's media type, file name and metadata reach the agent whatever its content.
    const attributes: PartAttributes = {
      ...(typeof p.mediaType === 'string' ? { mediaType: p.mediaType } : {}),
      ...(typeof p.filename === 'string' ? { filename: p.filename } : {}),
      ...(isJsonObject(p.metadata) ? { metadata: p.metadata } : {}),
    };
    if (typeof p.text === 'string' && (kind === undefined || kind === 'text')) parts.push({ type: 'text', text: p.text, ...attributes });
    // Any JSON value but null, as the dispatcher admits it (a string or a number is data too).
    else if (p.data !== undefined && p.data !== null && (kind === undefined || kind === 'data'))
      parts.push({ type: 'data', data: p.data as JsonValue, ...attributes });
    else if (typeof p.url === 'string' || typeof p.raw === 'string') {
      parts.push({
        type: 'file',
        ...(typeof p.url === 'string' ? { url: p.url } : {}),
        ...(typeof p.raw === 'string' ? { bytesBase64: p.raw } : {}),
        ...attributes,
      });
    }
  }
  const role = json.role === 'ROLE_AGENT' || json.role === 'agent' ? 'agent' : 'user';
  return {
    role,
    parts,
    ...(typeof json.messageId === 'string' ? { messageId: json.messageId } : {}),
    ...(json.metadata && typeof json.metadata === 'object' ? { metadata: json.metadata as JsonObject } : {}),
  };
}

function toWirePart(p: Part): JsonObject {
  const attributes = {
    ...(p.mediaType ? { mediaType: p.mediaType } : {}),
    ...(p.filename ? { filename: p.filename } : {}),
    ...(p.metadata ? { metadata: p.metadata } : {}),
  };
  switch (p.type) {
    case 'text':
      return { text: p.text, ...attributes };
    case 'data':
      return { data: p.data, ...attributes };
    case 'file':
      // An empty `raw` is content (zero bytes), not its absence: a part with neither url nor raw is no part.
      return {
        ...(p.url !== undefined ? { url: p.url } : {}),
        ...(p.bytesBase64 !== undefined ? { raw: p.bytesBase64 } : {}),
        ...attributes,
      };
  }
}

/** AgentMessage → A2A message JSON of this task. */
export function toWireMessage(m: AgentMessage, ids: { taskId: string; contextId: string }): JsonObject {
  return {
    messageId: m.messageId ?? randomUUID(),
    role: m.role === 'agent' ? 'ROLE_AGENT' : 'ROLE_USER',
    taskId: ids.taskId,
    contextId: ids.contextId,
    parts: m.parts.map(toWirePart),
    ...(m.metadata ? { metadata: m.metadata } : {}),
  };
}

/** ArtifactInput → A2A artifact JSON; the id is derived from the execution so a re-run names it alike. */
export function toWireArtifact(a: ArtifactInput, artifactId: string): JsonObject {
  return {
    artifactId,
    ...(a.name ? { name: a.name } : {}),
    ...(a.description ? { description: a.description } : {}),
    parts: a.parts.map(toWirePart),
    ...(a.metadata ? { metadata: a.metadata } : {}),
  };
}
