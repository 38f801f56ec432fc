import { openServiceDatabase } from '@mesh/database';
import { runMain } from '@mesh/service';
import { loadAgentsConfig } from './config/agents.config.js';
import { startAgents } from './agents.app.js';
import { sampleAgents } from './sample-agents/index.js';
import { agentsMigrations, AGENTS_SCHEMA } from './database/migrations/index.js';

runMain(
  'agents',
  async (logger) => startAgents(loadAgentsConfig(), sampleAgents, { logger }),
  async () => {
    const ds = await openServiceDatabase({
      url: loadAgentsConfig().DATABASE_URL,
      schema: AGENTS_SCHEMA,
      entities: [],
      migrations: agentsMigrations,
    });
    await ds.destroy();
  },
);
