import { z } from 'zod';
import { brokerList, postgresUrl } from './config-loader.js';

/** Kafka connection and topic naming. */
export const kafkaSpec = {
  KAFKA_BROKERS: brokerList,
  KAFKA_CLIENT_ID: z.string().min(1).default('agent-mesh'),
  TOPIC_PREFIX: z
    .string()
    .regex(/^[a-zA-Z0-9._-]{0,80}$/, 'letters, digits, dot, dash and underscore only')
    .default(''),
};

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
