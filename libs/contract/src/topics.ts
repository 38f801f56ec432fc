import { MeshError } from './errors.js';
import { isAgentId } from './ids.js';

/**
 * Topic names. A prefix (env `TOPIC_PREFIX`) separates deployments and test runs on one broker.
 * - commands: one topic per agent, keyed by the agent's channel key
 * - events: one topic for all agents' status/artifact events, keyed by task
 * - dead letters: one per source topic
 */
export class TopicNames {
  constructor(readonly prefix = '') {
    if (prefix !== '' && !/^[a-zA-Z0-9._-]{1,80}$/.test(prefix)) {
      throw new MeshError('CONFIG_INVALID', `invalid topic prefix "${prefix}"`);
    }
  }

  commands(agentId: string): string {
    if (!isAgentId(agentId)) throw new MeshError('CONTRACT_VIOLATION', `invalid agent id "${agentId}"`);
    return `${this.prefix}mesh.agent.${agentId}.commands`;
  }

  events(): string {
    return `${this.prefix}mesh.task.events`;
  }

  /** Compacted topic of the directory's card changes, keyed by `{tenant}/{agentId}`. */
  cards(): string {
    return `${this.prefix}mesh.directory.cards`;
  }

  heartbeats(): string {
    return `${this.prefix}mesh.directory.heartbeats`;
  }

  deadLetters(sourceTopic: string): string {
    return `${sourceTopic}.dlq`;
  }
}

/** How a topic is created: partitions and topic-level configs. */
export interface TopicSettings {
  partitions: number;
  configEntries: Array<{ name: string; value: string }>;
}

/**
 * The directory's topics, created by whichever service starts first (the directory, the
 * dispatcher's catalog, the agents, the demo): one definition, so no service waits for partitions
 * another one created differently (the directory once waited 60 s for a 3rd partition of a cards
 * topic the dispatcher had created with 1). Existing topics are never grown: the cards topic is
 * compacted by key and a new partition count would move keys.
 */
export const DIRECTORY_TOPICS: { cards: TopicSettings; heartbeats: TopicSettings } = {
  cards: {
    partitions: 3,
    configEntries: [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'min.compaction.lag.ms', value: '0' },
    ],
  },
  // Heartbeats are worthless after a few TTLs: short retention.
  heartbeats: { partitions: 3, configEntries: [{ name: 'retention.ms', value: '3600000' }] },
};
