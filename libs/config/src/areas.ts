import { z } from 'zod';
import { DEFAULT_EVENTS_PARTITIONS, MeshError, TopicDefinitions, TopicNames } from '@mesh/contract';
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
  /** SASL principal of this process (docs/operations.md, "Kafka identities"); unset: no authentication. */
  KAFKA_USERNAME: z.string().min(1).optional(),
  KAFKA_PASSWORD: z.string().min(1).optional(),
  KAFKA_SASL_MECHANISM: z.enum(['scram-sha-512', 'scram-sha-256', 'plain']).default('scram-sha-512'),
  /** TLS to the brokers (the chart's SASL_SSL listeners). */
  KAFKA_SSL: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
};

/** The SASL/TLS part of a Kafka connection, for `createKafka` (nothing when no principal is configured). */
export function kafkaCredentials(
  config: Pick<ConfigOf<typeof kafkaSpec>, 'KAFKA_USERNAME' | 'KAFKA_PASSWORD' | 'KAFKA_SASL_MECHANISM' | 'KAFKA_SSL'>,
): { sasl?: { mechanism: 'scram-sha-512' | 'scram-sha-256' | 'plain'; username: string; password: string }; ssl?: boolean } {
  if ((config.KAFKA_USERNAME === undefined) !== (config.KAFKA_PASSWORD === undefined)) {
    throw new MeshError('CONFIG_INVALID', 'KAFKA_USERNAME and KAFKA_PASSWORD go together: set both or neither');
  }
  return {
    ...(config.KAFKA_USERNAME !== undefined && config.KAFKA_PASSWORD !== undefined
      ? { sasl: { mechanism: config.KAFKA_SASL_MECHANISM, username: config.KAFKA_USERNAME, password: config.KAFKA_PASSWORD } }
      : {}),
    ...(config.KAFKA_SSL ? { ssl: true } : {}),
  };
}

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
