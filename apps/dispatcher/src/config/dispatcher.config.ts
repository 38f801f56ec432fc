import { databaseSpec, kafkaSpec, loadConfig, port, type ConfigOf } from '@mesh/config';

/** Everything the dispatcher reads from the environment, validated at start. */
export const dispatcherConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  DISPATCHER_PORT: port(8080),
};

export type DispatcherConfig = ConfigOf<typeof dispatcherConfigSpec>;

export function loadDispatcherConfig(env: NodeJS.ProcessEnv = process.env): DispatcherConfig {
  return loadConfig(dispatcherConfigSpec, env);
}
