import { Module, type DynamicModule } from '@nestjs/common';
import { AGENTS_RUNTIME_OPTIONS, AgentsRuntime, type AgentsRuntimeOptions } from './agents-runtime.js';
import { CommandController } from './command.controller.js';

/**
 * The workers: the runtime (channels, ledgers, tool gateways, reconciler, heartbeats) and the
 * command handlers. Global, so the ops endpoints read the same runtime.
 */
@Module({})
export class RuntimeModule {
  static forRoot(options: AgentsRuntimeOptions): DynamicModule {
    return {
      module: RuntimeModule,
      global: true,
      controllers: [CommandController],
      providers: [{ provide: AGENTS_RUNTIME_OPTIONS, useValue: options }, AgentsRuntime],
      exports: [AgentsRuntime],
    };
  }
}
