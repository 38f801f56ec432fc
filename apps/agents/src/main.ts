import { runAgents } from '@mesh/agent-runtime';
import { echoAgent, invoiceAgent, refundAgent, triageAgent, tckAgent } from './sample-agents/index.js';

// The TCK's agent runs only when AGENTS_RUN names it (the conformance run does).
const run =
  process.env.AGENTS_RUN || process.env.AGENTS_AGENT_IDS ? {} : { AGENTS_RUN: 'echo-agent,refund-agent,invoice-agent,triage-agent' };
runAgents({ agents: [echoAgent, refundAgent, invoiceAgent, triageAgent, tckAgent], env: { ...process.env, ...run } });
