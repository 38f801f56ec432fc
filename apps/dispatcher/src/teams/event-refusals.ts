import type { MessageContext } from '@mesh/bus';
import type { TaskEvent } from '@mesh/contract';
import { silentLogger, type Logger, type MeshMetrics } from '@mesh/telemetry';
import { EVENT_REFUSALS, type EventRefusal } from './event-signatures.js';

/**
 * Records an event the dispatcher dropped: counted (mesh_events_refused_total{reason}) and logged
 * with where it came from — agent, task, key id, topic, partition, offset — never its payload.
 */
export class EventRefusals {
  private readonly log: Logger;

  constructor(
    private readonly metrics?: Pick<MeshMetrics, 'eventsRefused'>,
    logger: Logger = silentLogger,
  ) {
    this.log = logger.child({ src: 'event-projector' });
    // Every reason on /metrics from the start: a rate over a series that appears late misses its first count.
    for (const reason of EVENT_REFUSALS) this.metrics?.eventsRefused.inc({ reason }, 0);
  }

  refused(reason: EventRefusal, event: TaskEvent, ctx?: Pick<MessageContext, 'topic' | 'partition' | 'offset'>, kid?: string): void {
    this.metrics?.eventsRefused.inc({ reason });
    this.log.warn(
      {
        reason,
        agent: event.identity.agentId,
        tenant: event.identity.tenant,
        task: event.identity.taskId,
        ...(kid !== undefined ? { kid } : {}),
        ...(ctx ? { topic: ctx.topic, partition: ctx.partition, offset: ctx.offset } : {}),
      },
      `refused an event: ${reason}`,
    );
  }
}
