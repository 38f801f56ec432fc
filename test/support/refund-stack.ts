// The refund conversation's whole stack for end-to-end specs: a dispatcher, billing-tools and an
// agents runtime running refund-agent, on the spec's own database and topic prefix.
import { textMessage as cliTextMessage } from '@mesh/app-cli';
import { refundAgent } from '@mesh/app-agents';
import { eventually } from './infra.js';
import { agentRecord, publishAgents, startTestDispatcher } from './dispatcher-harness.js';
import { startTestBillingTools } from '../agents/agents-fixtures.js';
import { startTestAgents } from './agents-runtime.js';

/** Starts the stack and waits until the dispatcher serves refund-agent's card; stopped when the spec ends. */
export async function startRefundStack(label: string) {
  const env = await startTestDispatcher(label);
  const billing = await startTestBillingTools(env.databaseUrl);
  const agents = await startTestAgents(env.prefix, env.databaseUrl, {
    AGENTS_RUN: 'refund-agent',
    AGENTS_MCP_SERVERS: JSON.stringify({ billing: { url: billing.mcpUrl } }),
  });
  await publishAgents(env.kafka, env.topics, [
    agentRecord('refund-agent', {
      card: { ...agentRecord('refund-agent').card, name: refundAgent.card.name, skills: refundAgent.card.skills },
      channel: { keyTemplate: refundAgent.channel.keyTemplate, partitions: refundAgent.channel.partitions },
    }),
  ]);
  await eventually('refund-agent card served', async () => (await fetch(`${env.url}/a2a/refund-agent/.well-known/agent-card.json`)).ok);
  return { env, billing, agents };
}

/** A blocking SendMessage request with one text part (the CLI's builder, waiting for the answer). */
export const textMessage = (text: string, ids: { taskId?: string; contextId?: string } = {}) => cliTextMessage(text, ids, true);
