import { createHash } from 'node:crypto';
import type { Message } from '@a2a-js/sdk';
import { canonicalJson, Envelopes, executionId, type AgentRecord, type Identity } from '@mesh/contract';
import type { Principal } from '@mesh/auth';
import type { OutboxCommands } from '../outbox/outbox-command.js';
import type { GrantSigner } from '../grants/grant-signer.js';
import type { ValidPushConfig } from '../push/push-config.js';
import type { Json, TurnRow } from './task.repository.js';

/** What SendMessage asks for, after authentication and agent resolution. */
export interface AcceptInput {
  principal: Principal;
  agent: AgentRecord;
  message: Message;
  deadlineUnixMs?: number;
  traceparent?: string;
  /** A push config given with the message: stored with the task, before any event of it can exist. */
  push?: ValidPushConfig;
  /** A task of a tree (delegation): its place and authority, carried on its commands. */
  tree?: TreeIdentity;
}

/** What a task of a tree carries besides the caller's identity (docs/agents.md, "Delegation"). */
export type TreeIdentity = Required<Pick<Identity, 'rootTaskId'>> & Pick<Identity, 'parentTaskId' | 'act' | 'retryBudget'>;

/** The hash a message's dedup compares: its canonical JSON. */
export const hashMessage = (m: Json) => createHash('sha256').update(canonicalJson(m)).digest('hex');

/**
 * A turn as it is written, whoever starts it (a caller's message, a delegated child, a parent
 * resumed with its children's outcomes): its identity and the row of TaskRepository.insertTurn,
 * with the run command built and bounded by OutboxCommands.
 */
export class TurnRows {
  constructor(
    private readonly commands: OutboxCommands,
    /** A turn no worker started this long after its accept is failed (0: never; see TaskEndings.failOverdue). */
    private readonly startTimeoutMs = 0,
    /** Signs the grant each run command carries (what its worker exchanges for tool tokens); none without it. */
    private readonly grants?: Pick<GrantSigner, 'grantFor'>,
  ) {}

  /** A turn as the repository writes it (INSERT_TURNS): `task` as it reads after the accept, the run command, the push config given. */
  row(
    input: AcceptInput,
    hash: string,
    identity: Identity,
    turn: number,
    message: Json,
    task: Json,
    first: { workHash: string | null; deadlineAt: string | null } = { workHash: null, deadlineAt: null },
  ): TurnRow {
    const cmd = this.commands.build(input.agent, Envelopes.run(identity, { turn, message }, this.grants?.grantFor(identity)));
    const status = task.status as { state: string; timestamp: string };
    return {
      tenant: identity.tenant,
      agent_id: identity.agentId,
      message_id: identity.messageId,
      content_hash: hash,
      task_id: identity.taskId,
      context_id: identity.contextId,
      turn,
      state: status.state,
      status_timestamp: status.timestamp,
      task,
      execution_id: identity.executionId,
      topic: cmd.topic,
      key: cmd.key,
      headers: cmd.headers,
      value: cmd.value,
      work_hash: first.workHash,
      deadline_at: first.deadlineAt,
      start_by_at: identity.startByUnixMs !== undefined ? new Date(identity.startByUnixMs).toISOString() : null,
      push_id: input.push?.id ?? null,
      push_url: input.push?.url ?? null,
      push_token: input.push?.token ?? null,
      push_auth_scheme: input.push?.authScheme ?? null,
      push_auth_credentials: input.push?.authCredentials ?? null,
      push_wire_version: input.push?.wireVersion ?? null,
    };
  }

  /** The identity a turn's commands carry: the caller's, its deadline and start-by time, its place in a tree. */
  identity(input: AcceptInput, taskId: string, contextId: string, turn: number): Identity {
    return {
      tenant: input.principal.tenant,
      agentId: input.agent.id,
      taskId,
      contextId,
      messageId: input.message.messageId,
      executionId: executionId(input.principal.tenant, taskId, turn),
      subject: input.principal.subject,
      actor: input.principal.actor,
      // Carried so a delegation can narrow them (docs/agents.md, "Delegation"); tools see them in their token.
      ...(input.principal.scopes.length > 0 ? { scopes: input.principal.scopes } : {}),
      ...(input.deadlineUnixMs !== undefined ? { deadlineUnixMs: input.deadlineUnixMs } : {}),
      // Every turn gets its own start-by time, from its accept.
      ...(this.startTimeoutMs > 0 ? { startByUnixMs: Date.now() + this.startTimeoutMs } : {}),
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
      ...input.tree,
    };
  }
}
