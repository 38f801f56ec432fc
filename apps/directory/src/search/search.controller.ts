import { Controller, Get, Inject, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { performance } from 'node:perf_hooks';
import type { Principal } from '@mesh/auth';
import { AuthGuard, CurrentPrincipal } from '../auth/auth.guard.js';
import { RegistryService } from '../registry/registry.service.js';
import type { AgentView } from '../registry/agent.view.js';
import { SearchService } from './search.service.js';

/** `GET /v1/agents?skill=&tag=&q=&inputMode=&outputMode=&healthy=&visibility=&cursor=&limit=`. */
@Controller('v1/agents')
@UseGuards(AuthGuard)
export class SearchController {
  constructor(
    @Inject(SearchService) private readonly searchService: SearchService,
    @Inject(RegistryService) private readonly registry: RegistryService,
  ) {}

  @Get()
  async search(
    @CurrentPrincipal() p: Principal,
    @Query() query: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ items: AgentView[]; nextCursor: string | null }> {
    const t0 = performance.now();
    const page = await this.searchService.search(p, this.searchService.parse(query));
    // Time spent in the query (database round trip included), for dashboards and the benchmark.
    res.setHeader('Server-Timing', `search;dur=${(performance.now() - t0).toFixed(2)}`);
    return {
      items: page.items.map(({ agent, rank }) =>
        rank === undefined ? this.registry.view(agent, p) : { ...this.registry.view(agent, p), rank },
      ),
      nextCursor: page.nextCursor,
    };
  }
}
