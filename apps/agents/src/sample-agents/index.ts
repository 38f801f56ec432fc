import type { AgentDefinition } from '@mesh/agent-sdk';
import { echoAgent } from './echo-agent.js';
import { refundAgent } from './refund-agent.js';
import { invoiceAgent } from './invoice-agent.js';
import { triageAgent } from './triage-agent.js';
import { tckAgent } from './tck-agent.js';

/** Agents this app can run, by id (AGENTS_RUN picks among them). */
export const sampleAgents: Record<string, AgentDefinition> = {
  [echoAgent.id]: echoAgent,
  [refundAgent.id]: refundAgent,
  [invoiceAgent.id]: invoiceAgent,
  [triageAgent.id]: triageAgent,
  [tckAgent.id]: tckAgent,
};

export { echoAgent, refundAgent, invoiceAgent, triageAgent, tckAgent };
