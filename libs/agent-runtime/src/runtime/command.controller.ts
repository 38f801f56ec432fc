import { Controller, Inject, UseFilters } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { BusExceptionFilter, type BusContext } from '@mesh/bus';
import { MeshError, type TaskCancelCommand, type TaskRunCommand } from '@mesh/contract';
import { AgentsRuntime } from './agents-runtime.js';
import type { AgentWorker } from './agent-worker.js';

/**
 * The command channels' handlers. Each agent's channel is its own KafkaBusTransport (its own
 * consumer group and limits), and Nest binds these handlers to every one of them; a command goes
 * to the worker of the topic it was read from, so a channel is served by its agent whatever the
 * envelope says (per-agent transport ids would need a handler class per agent, known only at
 * start). The filter hands errors to the bus unchanged, so a MeshError's `retryable` and a
 * database outage's transience decide retry or dead letter. Nest 12 types extra handler
 * parameters as `unknown`, hence the `BusContext` casts.
 */
@Controller()
@UseFilters(BusExceptionFilter)
export class CommandController {
  constructor(@Inject(AgentsRuntime) private readonly runtime: AgentsRuntime) {}

  @EventPattern('task.run')
  run(@Payload() command: TaskRunCommand, @Ctx() ctx: unknown): Promise<void> {
    const { topic, signal } = (ctx as BusContext).message;
    return this.workerOf(topic).handle(command, signal);
  }

  @EventPattern('task.cancel')
  cancel(@Payload() command: TaskCancelCommand, @Ctx() ctx: unknown): Promise<void> {
    const { topic, signal } = (ctx as BusContext).message;
    return this.workerOf(topic).handle(command, signal);
  }

  /** Events never belong on a command channel; they are ignored (as `AgentWorker.handle` does), not dead-lettered. */
  @EventPattern(['task.status', 'task.artifact'])
  ignore(): void {}

  private workerOf(topic: string): AgentWorker {
    const worker = this.runtime.workerFor(topic);
    if (!worker) throw new MeshError('NO_HANDLER', `no agent of this process consumes ${topic}`, { retryable: false });
    return worker;
  }
}
