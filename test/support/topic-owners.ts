import { createKafka, ensureTopics } from '@mesh/bus';
import { TopicDefinitions } from '@mesh/contract';
import { testRun } from './infra.js';

/**
 * Creates the topics the agents write but do not own — the events topic (the dispatcher's) and
 * the heartbeats topic (the directory's) — for a spec that runs the agents without those services.
 */
export async function standInForTopicOwners(prefix: string, eventsPartitions?: number): Promise<void> {
  const definitions = new TopicDefinitions(prefix, eventsPartitions === undefined ? undefined : { eventsPartitions });
  await ensureTopics(createKafka({ brokers: testRun().brokers, clientId: 'test-topic-owners' }), [
    definitions.events(),
    definitions.heartbeats(),
  ]);
}
