import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, UseGuards } from '@nestjs/common';
import { AgentIdPipe } from '../common/agent-id.pipe.js';
import { VersionNumberPipe } from '../common/version-number.pipe.js';
import type { Principal } from '@mesh/auth';
import { AuthGuard, CurrentPrincipal } from '../auth/auth.guard.js';
import { DirectoryError } from '../common/directory.exception.js';
import { RegistryService } from './registry.service.js';
import { ServedCards } from './served-card.js';
import type { AgentView } from './agent.view.js';
import type { AgentVersionEntity } from './agent-version.entity.js';

/** One card version as the API returns it; who wrote it and the channel are the owner's business only. */
const versionView = (v: AgentVersionEntity, owner: boolean) => ({
  version: v.version,
  card: v.card,
  visibility: v.visibility,
  createdAt: new Date(v.createdAt).toISOString(),
  ...(owner ? { channel: { keyTemplate: v.channelKeyTemplate, partitions: v.partitions }, createdBy: v.createdBy } : {}),
});

/** Register, read, update, retire agents; card versions; the served (rewritten, signed) card. */
@Controller('v1/agents')
@UseGuards(AuthGuard)
export class RegistryController {
  constructor(
    @Inject(RegistryService) private readonly registry: RegistryService,
    @Inject(ServedCards) private readonly served: ServedCards,
  ) {}

  @Post()
  @HttpCode(201)
  register(@CurrentPrincipal() p: Principal, @Body() body: unknown): Promise<AgentView> {
    return this.registry.register(p, body);
  }

  @Get(':id')
  async get(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string): Promise<AgentView> {
    return this.registry.view(await this.registry.get(p, id), p);
  }

  @Put(':id')
  update(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string, @Body() body: unknown): Promise<AgentView> {
    return this.registry.update(p, id, body);
  }

  @Delete(':id')
  retire(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string): Promise<AgentView> {
    return this.registry.retire(p, id);
  }

  @Get(':id/versions')
  async versions(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string) {
    const { owner, versions } = await this.registry.versions(p, id);
    return { items: versions.map((v) => versionView(v, owner)) };
  }

  @Get(':id/versions/:version')
  async version(
    @CurrentPrincipal() p: Principal,
    @Param('id', AgentIdPipe) id: string,
    @Param('version', VersionNumberPipe) version: number,
  ) {
    const { owner, version: v } = await this.registry.version(p, id, version);
    return versionView(v, owner);
  }

  @Get(':id/card')
  async card(@CurrentPrincipal() p: Principal, @Param('id', AgentIdPipe) id: string): Promise<Record<string, unknown>> {
    const agent = await this.registry.get(p, id);
    if (agent.retiredAt !== null) throw new DirectoryError('GONE', `agent "${id}" is retired`);
    return this.served.get(agent.id, agent.version, agent.card);
  }
}
