import { after } from 'node:test';
import { loadAgentsConfig, startAgents, type RunningAgents } from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { testRun } from './infra.js';
import { standInForTopicOwners } from './topic-owners.js';

/** Tool-token secret shared by the test agents runtime and test billing-tools. */
export const TEST_TOOL_TOKEN_SECRET = 'tool-token-secret-for-tests-only';

/**
 * The agents runtime (apps/agents) on the test broker, the spec's topic prefix and database, on
 * a free port, configured by `env` (AGENTS_RUN, AGENTS_MCP_SERVERS…); stopped when the spec ends.
 */
export async function startTestAgents(prefix: string, databaseUrl: string, env: Record<string, string>): Promise<RunningAgents> {
  // Specs run the agents without a directory, and often without a dispatcher.
  await standInForTopicOwners(prefix, env.EVENTS_TOPIC_PARTITIONS ? Number(env.EVENTS_TOPIC_PARTITIONS) : undefined);
  const agents = await startAgents(
    {
      ...loadAgentsConfig({
        KAFKA_BROKERS: testRun().brokers.join(','),
        TOPIC_PREFIX: prefix,
        DATABASE_URL: databaseUrl,
        // A worker given the dispatcher's token endpoint exchanges grants and holds no secret.
        ...(env.AGENTS_TOKEN_URL ? {} : { AGENTS_TOOL_TOKEN_SECRET: TEST_TOOL_TOKEN_SECRET }),
        ...env,
      }),
      AGENTS_PORT: 0,
    },
    sampleAgents,
  );
  after(() => agents.stop());
  return agents;
}
