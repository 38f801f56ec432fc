import { Controller, Get, Inject, Module, Res, type DynamicModule } from '@nestjs/common';
import type { Response } from 'express';
import { MeshMetrics } from './metrics.js';
import { answersForCluster, clusterMetrics, shareWithCluster } from './cluster-metrics.js';

@Controller()
export class MetricsController {
  private readonly cluster = answersForCluster();

  constructor(@Inject(MeshMetrics) private readonly metrics: MeshMetrics) {
    if (this.cluster) shareWithCluster(metrics.registry);
  }

  /**
   * Prometheus text exposition; in a node:cluster worker of `runClusterPrimary`, every worker's
   * metrics aggregated (a scrape of the shared port reaches one of them). When the aggregate
   * cannot be had, 503: a partial answer would read as counters going backwards.
   */
  @Get('metrics')
  async scrape(@Res() res: Response): Promise<void> {
    let text: string;
    try {
      text = this.cluster ? await clusterMetrics() : await this.metrics.registry.metrics();
    } catch (err) {
      res
        .status(503)
        .type('text/plain')
        .send(`metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`);
      return;
    }
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.send(text);
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
