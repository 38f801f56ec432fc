import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One A2A task. `task` holds the Task as A2A 1.0 JSON; the other columns index and guard it. */
@Entity({ name: 'tasks' })
export class TaskEntity {
  @PrimaryColumn('text') id!: string;
  @Column('text') tenant!: string;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('text', { name: 'context_id' }) contextId!: string;
  @Column('text') state!: string;
  @Column('integer') turn!: number;
  /** Bumped by every write (optimistic check of the event projector). */
  @Column('integer') version!: number;
  @Column('timestamptz', { name: 'status_timestamp' }) statusTimestamp!: Date;
  @Column('jsonb') task!: Record<string, unknown>;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}

/** One turn of a task; the unique `execution_id` is what workers dedup on. */
@Entity({ name: 'executions' })
export class ExecutionEntity {
  @PrimaryColumn('text', { name: 'execution_id' }) executionId!: string;
  @Column('text', { name: 'task_id' }) taskId!: string;
  @Column('text') tenant!: string;
  @Column('integer') turn!: number;
  @Column('text', { name: 'message_id' }) messageId!: string;
  /** Highest event `seq` applied; lower or equal ones are duplicates or late. */
  @Column('integer', { name: 'last_seq' }) lastSeq!: number;
  @Column('integer', { name: 'artifact_count' }) artifactCount!: number;
  /** The turn ended (terminal or interrupted); later events of it are ignored. */
  @Column('boolean') closed!: boolean;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

/** Dedup ledger: one row per (tenant, agent, messageId) with the hash of what was sent. */
@Entity({ name: 'message_dedup' })
export class MessageDedupEntity {
  @PrimaryColumn('text') tenant!: string;
  @PrimaryColumn('text', { name: 'agent_id' }) agentId!: string;
  @PrimaryColumn('text', { name: 'message_id' }) messageId!: string;
  @Column('text', { name: 'content_hash' }) contentHash!: string;
  @Column('text', { name: 'task_id' }) taskId!: string;
  @Column('integer') turn!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

/** A command written in the same transaction as its task, produced to Kafka by the relay. */
@Entity({ name: 'outbox' })
export class OutboxEntity {
  @PrimaryColumn('bigint') id!: string;
  @Column('text') topic!: string;
  @Column('text') key!: string;
  @Column('jsonb') headers!: Record<string, string>;
  @Column('text') value!: string;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

/** Every entity of the dispatcher's schema. */
export const dispatcherEntities = [TaskEntity, ExecutionEntity, MessageDedupEntity, OutboxEntity];
