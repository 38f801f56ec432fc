import type { AgentDefinition } from '@mesh/agent-sdk';
import { openServiceDatabase } from '@mesh/database';
import { runMain } from '@mesh/service';
import { startAgents } from './agents.app.js';
import { loadAgentsConfig } from './config/agents.config.js';
import { agentsMigrations, AGENTS_SCHEMA } from './database/migrations/index.js';

/** What a worker's main file passes to {@link runAgents}. */
export interface RunAgentsOptions {
  /**
   * The agents this worker serves; AGENTS_RUN (or the chart's AGENTS_AGENT_IDS) may pick some of
   * them. A function is called at start (remote agents fetch their cards then).
   */
  agents: readonly AgentDefinition[] | (() => Promise<readonly AgentDefinition[]>);
  /** Where the configuration is read (default `process.env`; see docs/agents.md, "Configuration"). */
  env?: NodeJS.ProcessEnv;
}

/**
 * A worker process for `agents`: registers their cards with the directory (AGENTS_DIRECTORY_URL,
 * under the team's AGENTS_DIRECTORY_TOKEN), consumes only their command channels, drains on
 * SIGTERM, and prints one line and exits non-zero when it cannot start. `MIGRATE_ONLY=true`
 * migrates the worker's ledgers and exits (the chart's migration job). Call it once, from main.
 */
export function runAgents(opts: RunAgentsOptions): void {
  const env = opts.env ?? process.env;
  runMain(
    'agents',
    async (logger) => {
      const config = loadAgentsConfig(env);
      const agents = typeof opts.agents === 'function' ? await opts.agents() : opts.agents;
      return startAgents(config, agents, { logger });
    },
    async () => {
      const ds = await openServiceDatabase({
        url: loadAgentsConfig(env).DATABASE_URL,
        schema: AGENTS_SCHEMA,
        entities: [],
        migrations: agentsMigrations,
      });
      await ds.destroy();
    },
  );
}
