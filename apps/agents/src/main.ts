import { runMain } from '@mesh/service';
import { loadAgentsConfig } from './config/agents.config.js';
import { startAgents } from './agents.app.js';

runMain('agents', async () => startAgents(loadAgentsConfig()));
