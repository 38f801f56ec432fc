import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AgentVisibility } from '@mesh/contract';

/** Current state of one registered agent (table `directory.agent`). */
@Entity({ name: 'agent', schema: 'directory' })
export class AgentEntity {
  @PrimaryColumn({ type: 'text' }) id!: string;
  @Column({ type: 'text' }) tenant!: string;
  @Column({ type: 'text' }) visibility!: AgentVisibility;
  @Column({ type: 'integer' }) version!: number;
  @Column({ type: 'jsonb' }) card!: Record<string, unknown>;
  @Column({ type: 'text', name: 'channel_key_template' }) channelKeyTemplate!: string;
  @Column({ type: 'integer' }) partitions!: number;
  @Column({ type: 'text', array: true, name: 'skill_ids' }) skillIds!: string[];
  @Column({ type: 'text', array: true, name: 'skill_tags' }) skillTags!: string[];
  @Column({ type: 'text', array: true, name: 'input_modes' }) inputModes!: string[];
  @Column({ type: 'text', array: true, name: 'output_modes' }) outputModes!: string[];
  /** Written only through SQL (`to_tsvector`), never read back. */
  @Column({ type: 'tsvector', name: 'search_document', select: false, insert: false, update: false }) searchDocument!: string;
  @Column({ type: 'text', name: 'registered_by' }) registeredBy!: string;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'retired_at', nullable: true }) retiredAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'last_heartbeat_at', nullable: true }) lastHeartbeatAt!: Date | null;
  @Column({ type: 'integer', name: 'heartbeat_ttl_ms', nullable: true }) heartbeatTtlMs!: number | null;
  @Column({ type: 'timestamptz', name: 'healthy_until', nullable: true }) healthyUntil!: Date | null;
  @Column({ type: 'integer' }) revision!: number;
  @Column({ type: 'integer', name: 'published_revision' }) publishedRevision!: number;
}
