import 'reflect-metadata';
import { assertKafkaReachable, createKafka, KafkaProbe } from '@mesh/bus';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { AppModule } from './app.module.js';
import type { DispatcherConfig } from './config/dispatcher.config.js';
import { dispatcherMigrations, DISPATCHER_SCHEMA } from './database/migrations/index.js';

/** A running dispatcher: `stop` drains and closes every connection. */
export interface RunningDispatcher {
  url: string;
  stop(): Promise<void>;
}

/** Starts the dispatcher: database (created and migrated), Kafka check, HTTP server. */
export async function startDispatcher(config: DispatcherConfig): Promise<RunningDispatcher> {
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-dispatcher` };
  await assertKafkaReachable(kafkaOpts);
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: DISPATCHER_SCHEMA,
    entities: [],
    migrations: dispatcherMigrations,
  });
  const kafkaProbe = new KafkaProbe(createKafka(kafkaOpts));
  const app = await startHttpService({
    module: AppModule.forRoot([new PostgresProbe(ds), kafkaProbe]),
    port: config.DISPATCHER_PORT,
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
