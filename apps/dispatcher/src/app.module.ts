import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type HealthProbe } from '@mesh/service';
import { A2aModule } from './a2a/a2a.module.js';
import { CoreModule, type DispatcherDeps } from './core.module.js';
import { TaskLifecycleModule } from './tasks/task-lifecycle.module.js';
import { GrantsModule } from './grants/grants.module.js';

/**
 * Root module of the dispatcher. Start and drain follow the imports: a module starts
 * (`onApplicationBootstrap`) after the modules it imports and drains (`onApplicationShutdown`,
 * once the HTTP server and the projector's transport closed) before them; the core connections
 * open first and close last.
 */
@Module({})
export class AppModule {
  static forRoot(deps: DispatcherDeps, probes: HealthProbe[]): DynamicModule {
    return {
      module: AppModule,
      imports: [HealthModule.forProbes(probes), CoreModule.forDeps(deps), A2aModule, TaskLifecycleModule, GrantsModule],
    };
  }
}
