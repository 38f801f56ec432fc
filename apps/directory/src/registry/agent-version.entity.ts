import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { AgentVisibility } from '@mesh/contract';

/** One registered card version, kept after updates and retirement (table `directory.agent_version`). */
@Entity({ name: 'agent_version', schema: 'directory' })
export class AgentVersionEntity {
  @PrimaryColumn({ type: 'text', name: 'agent_id' }) agentId!: string;
  @PrimaryColumn({ type: 'integer' }) version!: number;
  @Column({ type: 'jsonb' }) card!: Record<string, unknown>;
  @Column({ type: 'text', name: 'channel_key_template' }) channelKeyTemplate!: string;
  @Column({ type: 'integer' }) partitions!: number;
  @Column({ type: 'text' }) visibility!: AgentVisibility;
  @Column({ type: 'text', name: 'created_by' }) createdBy!: string;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
