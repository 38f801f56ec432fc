import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { AgentIdPipe } from '../common/agent-id.pipe.js';
import type { Principal } from '@mesh/auth';
import { AuthGuard, CurrentPrincipal } from '../auth/auth.guard.js';
import { CARD_STREAM, DIRECTORY_CONFIG } from '../common/tokens.js';
import { DirectoryError } from '../common/directory.exception.js';
import type { DirectoryConfig } from '../config/directory.config.js';
import type { CardStream } from '../card-stream/card-stream.port.js';
import { RegistryService } from '../registry/registry.service.js';
import { assertOwner } from '../registry/agent.view.js';
import { parseOrThrow, registrySchemas } from '../registry/registry.schemas.js';
import { TokenBucketLimiter } from '../registry/rate-limiter.js';
import { LivenessService } from './liveness.service.js';

/** `POST /v1/agents/{id}/heartbeat` — the HTTP twin of a heartbeat on the Kafka topic. */
@Controller('v1/agents')
@UseGuards(AuthGuard)
export class HeartbeatController {
  private readonly schema;
  /** Per agent of a tenant: each accepted heartbeat is a database write and a Kafka record. */
  private readonly limiter: TokenBucketLimiter;

  constructor(
    @Inject(RegistryService) private readonly registry: RegistryService,
    @Inject(LivenessService) private readonly liveness: LivenessService,
    @Inject(CARD_STREAM) private readonly stream: CardStream,
    @Inject(DIRECTORY_CONFIG) config: DirectoryConfig,
  ) {
    this.schema = registrySchemas(config.DIRECTORY_MAX_PARTITIONS).heartbeat;
    this.limiter = new TokenBucketLimiter(config.DIRECTORY_HEARTBEATS_PER_MINUTE, config.DIRECTORY_HEARTBEATS_PER_MINUTE);
  }

  @Post(':id/heartbeat')
  @HttpCode(200)
  async heartbeat(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string, @Body() body: unknown) {
    const req = parseOrThrow(this.schema, body, 'heartbeat');
    // Before any database work: an excess heartbeat costs nothing but this check.
    const wait = this.limiter.take(`${p.tenant}/${id}`);
    if (wait > 0) {
      throw new DirectoryError('RATE_LIMITED', `too many heartbeats for agent "${id}"; retry in ${wait} s`, [], { retryAfterSec: wait });
    }
    const agent = await this.registry.get(p, id);
    assertOwner(id, agent, p);
    if (agent.retiredAt !== null) throw new DirectoryError('CONFLICT', `agent "${id}" is retired`);
    const beat = {
      agentId: id,
      workerId: req.workerId ?? `http:${p.subject}`,
      atUnixMs: Date.now(),
      ttlMs: req.ttlMs ?? this.liveness.defaultTtlMs,
    };
    await this.liveness.record([beat]);
    // Best effort: the database is the directory's truth; the topic feeds other services' caches.
    await this.stream.publishHeartbeat(beat).catch(() => undefined);
    return this.registry.view(await this.registry.get(p, id), p);
  }
}
