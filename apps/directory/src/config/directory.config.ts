import { databaseSpec, kafkaSpec, loadConfig, port, type ConfigOf } from '@mesh/config';

/** Everything the directory reads from the environment, validated at start. */
export const directoryConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  DIRECTORY_PORT: port(8081),
};

export type DirectoryConfig = ConfigOf<typeof directoryConfigSpec>;

export function loadDirectoryConfig(env: NodeJS.ProcessEnv = process.env): DirectoryConfig {
  return loadConfig(directoryConfigSpec, env);
}
