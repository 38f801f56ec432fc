// A worker process for the delegation specs (they SIGKILL it): the agents runtime configured from
// the environment (AGENTS_RUN…), with the sample agents and the test delegator.
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { sampleAgents } from '@mesh/app-agents';
import { delegatorAgent } from './delegator-agent.js';

const agents = await startAgents(
  { ...loadAgentsConfig(process.env), AGENTS_PORT: 0 },
  { ...sampleAgents, [delegatorAgent.id]: delegatorAgent },
);
process.stdout.write(`ready ${agents.url}\n`);
process.once('SIGTERM', () => void agents.stop().then(() => process.exit(0)));
