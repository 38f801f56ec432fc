import { Controller, Get, Inject, Module, Res, type DynamicModule } from '@nestjs/common';
import type { Response } from 'express';
import { MeshMetrics } from './metrics.js';

@Controller()
export class MetricsController {
  constructor(@Inject(MeshMetrics) private readonly metrics: MeshMetrics) {}

  /** Prometheus text exposition. */
  @Get('metrics')
  async scrape(@Res() res: Response): Promise<void> {
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.send(await this.metrics.registry.metrics());
  }
}

/** `GET /metrics` over the process's MeshMetrics, which is also injectable by the app. */
@Module({})
export class MetricsModule {
  static forMetrics(metrics: MeshMetrics): DynamicModule {
    return {
      module: MetricsModule,
      global: true,
      controllers: [MetricsController],
      providers: [{ provide: MeshMetrics, useValue: metrics }],
      exports: [MeshMetrics],
    };
  }
}
