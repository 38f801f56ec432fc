import 'reflect-metadata';
import { assertKafkaReachable, createKafka, KafkaProbe } from '@mesh/bus';
import { openServiceDatabase, PostgresProbe } from '@mesh/database';
import { startHttpService } from '@mesh/service';
import { AppModule } from './app.module.js';
import type { DirectoryConfig } from './config/directory.config.js';
import { directoryMigrations, DIRECTORY_SCHEMA } from './database/migrations/index.js';

/** A running directory: `stop` drains and closes every connection. */
export interface RunningDirectory {
  url: string;
  stop(): Promise<void>;
}

/** Starts the directory: database (created and migrated), Kafka check, HTTP server. */
export async function startDirectory(config: DirectoryConfig): Promise<RunningDirectory> {
  const kafkaOpts = { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-directory` };
  await assertKafkaReachable(kafkaOpts);
  const ds = await openServiceDatabase({
    url: config.DATABASE_URL,
    schema: DIRECTORY_SCHEMA,
    entities: [],
    migrations: directoryMigrations,
  });
  const kafkaProbe = new KafkaProbe(createKafka(kafkaOpts));
  const app = await startHttpService({
    module: AppModule.forRoot([new PostgresProbe(ds), kafkaProbe]),
    port: config.DIRECTORY_PORT,
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
