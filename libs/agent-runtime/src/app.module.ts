import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type HealthProbe } from '@mesh/service';
import { MetricsModule } from './metrics/metrics.controller.js';
import { OpsModule, type OpsSettings } from './ops/ops.controller.js';
import type { AgentsRuntimeOptions } from './runtime/agents-runtime.js';
import { RuntimeModule } from './runtime/runtime.module.js';

/** What the agents app is composed of. */
export interface AppModuleOptions {
  runtime: AgentsRuntimeOptions;
  probes: HealthProbe[];
  ops: OpsSettings;
}

/** Root module of the agents: the workers (RuntimeModule), health, metrics and the ops endpoints. */
@Module({})
export class AppModule {
  static forRoot(opts: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        HealthModule.forProbes(opts.probes),
        MetricsModule.forMetrics(opts.runtime.metrics),
        RuntimeModule.forRoot(opts.runtime),
        OpsModule.forRoot(opts.ops),
      ],
    };
  }
}
