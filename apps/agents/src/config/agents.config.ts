import { databaseSpec, kafkaSpec, loadConfig, port, type ConfigOf } from '@mesh/config';

/** Everything the agents reads from the environment, validated at start. */
export const agentsConfigSpec = {
  ...kafkaSpec,
  ...databaseSpec,
  AGENTS_PORT: port(8082),
};

export type AgentsConfig = ConfigOf<typeof agentsConfigSpec>;

export function loadAgentsConfig(env: NodeJS.ProcessEnv = process.env): AgentsConfig {
  return loadConfig(agentsConfigSpec, env);
}
