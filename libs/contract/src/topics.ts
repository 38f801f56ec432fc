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
