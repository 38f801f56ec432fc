import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { AgentHeartbeat } from '@mesh/contract';
import { DATA_SOURCE, DIRECTORY_CONFIG } from '../common/tokens.js';
import type { DirectoryConfig } from '../config/directory.config.js';

/** Records heartbeats: an agent is healthy until its freshest heartbeat plus that heartbeat's TTL. */
@Injectable()
export class LivenessService {
  constructor(
    @Inject(DATA_SOURCE) private readonly ds: DataSource,
    @Inject(DIRECTORY_CONFIG) private readonly config: DirectoryConfig,
  ) {}

  get defaultTtlMs(): number {
    return this.config.DIRECTORY_HEARTBEAT_TTL_MS;
  }

  /**
   * Applies heartbeats (HTTP or Kafka). A worker clock ahead of ours never extends health past
   * now + TTL, and an older heartbeat arriving late never shortens it. Unknown agents are ignored.
   */
  async record(beats: ReadonlyArray<Pick<AgentHeartbeat, 'agentId' | 'atUnixMs' | 'ttlMs'>>): Promise<number> {
    if (beats.length === 0) return 0;
    const rows: unknown[] = await this.ds.query(
      `WITH b AS (
         SELECT DISTINCT ON (id) id, at, ttl FROM (
           SELECT u.id, least(to_timestamp(u.at / 1000.0), now()) AS at, u.ttl
             FROM unnest($1::text[], $2::float8[], $3::int[]) AS u(id, at, ttl)) x
         ORDER BY id, at + make_interval(secs => ttl / 1000.0) DESC)
       UPDATE directory.agent a
          SET last_heartbeat_at = greatest(a.last_heartbeat_at, b.at),
              heartbeat_ttl_ms = b.ttl,
              healthy_until = greatest(a.healthy_until, b.at + make_interval(secs => b.ttl / 1000.0))
         FROM b WHERE a.id = b.id
       RETURNING a.id`,
      [beats.map((b) => b.agentId), beats.map((b) => b.atUnixMs), beats.map((b) => b.ttlMs || this.defaultTtlMs)],
    );
    return rows.length;
  }
}
