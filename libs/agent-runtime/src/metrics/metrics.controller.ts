import { Controller, Get, Inject, Module, Res, type DynamicModule } from '@nestjs/common';
import type { Response } from 'express';
import { AgentsMetrics } from './agents.metrics.js';

@Controller()
export class MetricsController {
  constructor(@Inject(AgentsMetrics) private readonly metrics: AgentsMetrics) {}

  /** Prometheus exposition. */
  @Get('metrics')
  async scrape(@Res() res: Response): Promise<void> {
    res.type(this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}

/** `/metrics` over the process's AgentsMetrics. */
@Module({})
export class MetricsModule {
  static forMetrics(metrics: AgentsMetrics): DynamicModule {
    return { module: MetricsModule, controllers: [MetricsController], providers: [{ provide: AgentsMetrics, useValue: metrics }] };
  }
}
