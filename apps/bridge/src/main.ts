import { runAgents } from '@mesh/agent-runtime';
import { remoteAgents } from './remote-agents-config.js';

// One bridge per team: its AGENTS_DIRECTORY_TOKEN is the team's, and it registers the remotes' cards.
runAgents({ agents: () => remoteAgents(process.env) });
