import { runAgents } from '@mesh/agent-runtime';
import { wordCountAgent } from './word-count-agent.js';

// Configuration comes from the environment: KAFKA_BROKERS, DATABASE_URL, AGENTS_DIRECTORY_URL,
// AGENTS_DIRECTORY_TOKEN… (docs/agents.md, "Bring your own agent: your own worker").
runAgents({ agents: [wordCountAgent] });
