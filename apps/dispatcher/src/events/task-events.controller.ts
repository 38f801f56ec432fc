import { Controller, Inject, UseFilters } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { BusExceptionFilter, KEYED_BATCH_PATTERN, type BusBatchContext } from '@mesh/bus';
import type { Envelope } from '@mesh/contract';
import { EventProjector } from './event-projector.js';

/**
 * The events topic as the projector's transport delivers it (batch mode: a task's queued events
 * at once). Errors pass through unchanged so the bus keeps a database outage transient.
 */
@Controller()
@UseFilters(new BusExceptionFilter())
export class TaskEventsController {
  constructor(@Inject(EventProjector) private readonly projector: EventProjector) {}

  @EventPattern(KEYED_BATCH_PATTERN)
  // Nest 12 types the extra handler arguments as unknown.
  project(@Payload() envelopes: Envelope[], @Ctx() ctx: unknown): Promise<void> {
    return this.projector.projectRecords(envelopes, (ctx as BusBatchContext).messages);
  }
}
