import 'reflect-metadata';
import { assertKafkaReachable, createKafka, KafkaProbe } from '@mesh/bus';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { AppModule } from './app.module.js';
import type { AgentsConfig } from './config/agents.config.js';
import { agentsMigrations, AGENTS_SCHEMA } from './database/migrations/index.js';

/** A running agents: `stop` drains and closes every connection. */
export interface RunningAgents {
  url: string;
  stop(): Promise<void>;
}

/** Starts the agents: database (created and migrated), Kafka check, HTTP server. */
export async function startAgents(config: AgentsConfig): Promise<RunningAgents> {
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-agents` };
  await assertKafkaReachable(kafkaOpts);
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: AGENTS_SCHEMA,
    entities: [],
    migrations: agentsMigrations,
  });
  const kafkaProbe = new KafkaProbe(createKafka(kafkaOpts));
  const app = await startHttpService({
    module: AppModule.forRoot([new PostgresProbe(ds), kafkaProbe]),
    port: config.AGENTS_PORT,
  });
  return {
    url: await app.getUrl(),
    async stop() {
      await app.close();
      await kafkaProbe.close();
      await ds.destroy();
    },
  };
}
