import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type HealthProbe } from '@mesh/service';
import type { AgentsMetrics } from './metrics/agents.metrics.js';
import { MetricsModule } from './metrics/metrics.controller.js';
import { OpsModule, type OpsDeps } from './ops/ops.controller.js';

/** Root module of the agents: health and metrics (the workers themselves run outside Nest's request cycle). */
@Module({})
export class AppModule {
  static forRoot(probes: HealthProbe[], metrics: AgentsMetrics, ops: OpsDeps): DynamicModule {
    return { module: AppModule, imports: [HealthModule.forProbes(probes), MetricsModule.forMetrics(metrics), OpsModule.forDeps(ops)] };
  }
}
