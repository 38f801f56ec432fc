import { MeshError } from './errors.js';
import { isAgentId } from './ids.js';

const PREFIX = /^[a-zA-Z0-9._-]{1,80}$/;

function checkedPrefix(prefix: string): string {
  if (prefix !== '' && !PREFIX.test(prefix)) throw new MeshError('CONFIG_INVALID', `invalid topic prefix "${prefix}"`);
  return prefix;
}

function checkedAgentId(agentId: string): string {
  if (!isAgentId(agentId)) throw new MeshError('CONTRACT_VIOLATION', `invalid agent id "${agentId}"`);
  return agentId;
}

/**
 * Topic names. A prefix (env `TOPIC_PREFIX`) separates deployments and test runs on one broker.
 * - commands: one topic per agent, keyed by the agent's channel key
 * - events: one topic for all agents' status/artifact events, keyed by task
 * - team events: the same for the workers teams run themselves, every record signed
 * - cards, heartbeats: the directory's catalog and liveness
 * - dead letters: one per source topic
 */
export class TopicNames {
  readonly prefix: string;

  constructor(prefix = '') {
    this.prefix = checkedPrefix(prefix);
  }

  commands(agentId: string): string {
    return `${this.prefix}mesh.agent.${checkedAgentId(agentId)}.commands`;
  }

  events(): string {
    return `${this.prefix}mesh.task.events`;
  }

  /**
   * Events of the workers teams run themselves (docs/bus.md, "Team events"): keyed by task like
   * {@link events}, every record signed by its team's key; writable by team principals, which the
   * platform's events topic is not.
   */
  teamEvents(): string {
    return `${this.prefix}mesh.team.events`;
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

/**
 * Consumer-group names. Another process reads a group's offsets (the CLI and console report an
 * agent's lag, the dispatcher's admission reads its backlog, the fan-out starts where the
 * projector stands), so each group is named here once. Groups whose name ends in a per-replica
 * id take that id as an argument.
 */
export class ConsumerGroups {
  readonly prefix: string;

  constructor(prefix = '') {
    this.prefix = checkedPrefix(prefix);
  }

  /** The agents runtime's workers of one agent, reading its command topic. */
  agentWorkers(agentId: string): string {
    return `${this.agentWorkersPrefix()}${checkedAgentId(agentId)}`;
  }

  /** What every agent's worker group name starts with (tools that watch them match on it). */
  agentWorkersPrefix(): string {
    return `${this.prefix}agents.`;
  }

  /** The dispatcher's event projector (one group over all replicas): its offsets mark what is stored. */
  dispatcherProjector(): string {
    return `${this.prefix}mesh.dispatcher.projector`;
  }

  /** One dispatcher replica's catalog reader; the catalog adds `-cards` / `-heartbeats` and its own id. */
  dispatcherCatalog(): string {
    return `${this.prefix}dispatcher-catalog`;
  }

  /** The directory's heartbeat consumer (one group over all replicas: liveness is stored once). */
  directoryHeartbeats(clientId: string): string {
    return `${this.prefix}${clientId}-directory-heartbeats`;
  }
}

/** How a topic is created. Every service that may create a topic first uses these settings. */
export interface TopicSettings {
  partitions: number;
  /** Topic-level configs (compaction, retention). */
  configEntries: Array<{ name: string; value: string }>;
  /** Unset: the broker's `default.replication.factor`. */
  replicationFactor?: number;
  /**
   * Whether an existing topic with fewer partitions is grown. False for keyed topics: growing one
   * under running producers and consumers moves keys to other partitions mid-task.
   */
  grow: boolean;
}

/** A topic's name with its settings. */
export interface TopicDefinition extends TopicSettings {
  name: string;
}

/** The configured part of the topic layout (libs/config's Kafka settings). */
export interface TopicLayout {
  /** Partitions of the events topic (`EVENTS_TOPIC_PARTITIONS`). */
  eventsPartitions: number;
  /** Replication factor of every topic (`KAFKA_REPLICATION_FACTOR`); unset: the broker's default. */
  replicationFactor?: number;
}

/** Partitions of the events topic unless configured. */
export const DEFAULT_EVENTS_PARTITIONS = 6;
/** Partitions of an agent's command topic when its registration does not say. */
export const DEFAULT_COMMAND_PARTITIONS = 3;
/** Heartbeats are worthless after a few TTLs: an hour of them is kept. */
export const HEARTBEATS_RETENTION_MS = 3_600_000;

/**
 * The one definition of every topic, used by its owner (docs/bus.md, "Who creates each topic":
 * the directory for cards, heartbeats and command topics, the dispatcher for events) and by what
 * stands in for an owner (a runtime without a directory, the tests), so every copy of a topic has
 * the same settings. Existing topics are not grown: all of them are keyed (the cards topic is compacted
 * by key), and a new partition count would move keys. Only the directory grows a command topic,
 * when an agent's registration asks for more partitions.
 */
export class TopicDefinitions {
  readonly names: TopicNames;

  constructor(
    names: TopicNames | string,
    private readonly layout: TopicLayout = { eventsPartitions: DEFAULT_EVENTS_PARTITIONS },
  ) {
    this.names = typeof names === 'string' ? new TopicNames(names) : names;
  }

  /** An agent's command topic; its partitions come from the agent's registration. */
  commands(agentId: string, partitions: number = DEFAULT_COMMAND_PARTITIONS): TopicDefinition {
    return this.define(this.names.commands(agentId), partitions, []);
  }

  events(): TopicDefinition {
    return this.define(this.names.events(), this.layout.eventsPartitions, []);
  }

  /** Same settings as {@link events}: a task's id picks the same partition number on both. */
  teamEvents(): TopicDefinition {
    return this.define(this.names.teamEvents(), this.layout.eventsPartitions, []);
  }

  cards(): TopicDefinition {
    return this.define(this.names.cards(), 3, [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'min.compaction.lag.ms', value: '0' },
    ]);
  }

  heartbeats(): TopicDefinition {
    return this.define(this.names.heartbeats(), 3, [{ name: 'retention.ms', value: String(HEARTBEATS_RETENTION_MS) }]);
  }

  /** The dead-letter topic of a source topic: one partition, read by operators, not by workers. */
  deadLetters(sourceTopic: string): TopicDefinition {
    return this.define(this.names.deadLetters(sourceTopic), 1, []);
  }

  private define(name: string, partitions: number, configEntries: TopicSettings['configEntries']): TopicDefinition {
    return {
      name,
      partitions,
      configEntries,
      grow: false,
      ...(this.layout.replicationFactor !== undefined ? { replicationFactor: this.layout.replicationFactor } : {}),
    };
  }
}
