import { z } from 'zod';
import { DEFAULT_EVENTS_PARTITIONS, TopicDefinitions, TopicNames } from '@mesh/contract';
import { brokerList, positiveInt, postgresUrl, type ConfigOf } from './config-loader.js';

/** Kafka connection, topic naming and the topic settings every service creates topics with. */
export const kafkaSpec = {
  KAFKA_BROKERS: brokerList,
  KAFKA_CLIENT_ID: z.string().min(1).default('agent-mesh'),
  TOPIC_PREFIX: z
    .string()
    .regex(/^[a-zA-Z0-9._-]{0,80}$/, 'letters, digits, dot, dash and underscore only')
    .default(''),
  /** Partitions of the task events topic, for whichever service creates it (an existing one is never grown). */
  EVENTS_TOPIC_PARTITIONS: positiveInt(DEFAULT_EVENTS_PARTITIONS),
  /** Replication factor of every topic a service creates; unset: the broker's `default.replication.factor`. */
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().positive().optional(),
};

/** The topic definitions of `@mesh/contract` with this deployment's prefix, partitions and replication. */
export function topicDefinitions(
  config: Pick<ConfigOf<typeof kafkaSpec>, 'TOPIC_PREFIX' | 'EVENTS_TOPIC_PARTITIONS' | 'KAFKA_REPLICATION_FACTOR'>,
): TopicDefinitions {
  return new TopicDefinitions(new TopicNames(config.TOPIC_PREFIX), {
    eventsPartitions: config.EVENTS_TOPIC_PARTITIONS,
    ...(config.KAFKA_REPLICATION_FACTOR !== undefined ? { replicationFactor: config.KAFKA_REPLICATION_FACTOR } : {}),
  });
}

/** Postgres. The database is created at start when missing. */
export const databaseSpec = {
  DATABASE_URL: postgresUrl('postgres://postgres@127.0.0.1:5432/agent_mesh'),
};

/**
 * HTTP listener. Loopback unless configured: a service reachable from other machines is a
 * deliberate choice (containers set `HTTP_HOST=0.0.0.0`; the chart and docker-compose.yml do).
 */
export const httpSpec = {
  HTTP_HOST: z
    .string()
    .regex(/^(\[?[0-9a-fA-F:.]+\]?|[a-zA-Z0-9.-]+)$/, 'expected an IP address or host name to listen on, e.g. 127.0.0.1 or 0.0.0.0')
    .default('127.0.0.1'),
};
