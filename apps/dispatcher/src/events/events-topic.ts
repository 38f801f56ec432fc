import type { OnApplicationBootstrap } from '@nestjs/common';
import { BusAdmin, type Kafka } from '@mesh/bus';
import type { TopicDefinitions } from '@mesh/contract';
import type { TaskAffinity } from '../tasks/task-affinity.js';

/**
 * The agents' events topic and the team events topic (same settings), created at bootstrap if missing. Providers that read it inject this
 * one, so they start after it (the projector's transport starts after every bootstrap hook).
 */
export class EventsTopic implements OnApplicationBootstrap {
  constructor(
    private readonly kafka: Kafka,
    private readonly topics: TopicDefinitions,
    private readonly affinity?: Pick<TaskAffinity, 'partitions'>,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const admin = new BusAdmin(this.kafka);
    // Never grown: the topic is keyed by task, and growing it under running workers can split one
    // task's events over two partitions (a COMPLETED projected before its artifact reads as FAILED).
    const events = this.topics.events();
    try {
      await admin.ensureTopic(events.name, events);
      const teamEvents = this.topics.teamEvents();
      await admin.ensureTopic(teamEvents.name, teamEvents);
      // As it is (created elsewhere, it may have another count): new task ids are drawn for it.
      this.affinity?.partitions(await admin.partitionCount(events.name));
    } finally {
      await admin.close();
    }
  }
}
