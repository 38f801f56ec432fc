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
