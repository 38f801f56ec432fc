import { createHash } from 'node:crypto';

/** Whether an agent is public: only public agents are named by their id on `/metrics`. */
export type PublicAgents = (agentId: string) => boolean;

/**
 * What `/metrics` (open to whoever reaches the port, for Prometheus) calls an agent that is not
 * public: a stable alias, so another tenant's non-public agent ids are never listed there. Its owner
 * computes the alias from the id; `/ops/lag` (ops token) names the agent behind it.
 */
export const privateAgentAlias = (agentId: string): string => `private-${createHash('sha256').update(agentId).digest('hex').slice(0, 12)}`;

/**
 * The value an agent goes by in every metric label that names it (`agent`, and its group or topic
 * where those carry its id): its id when public, else {@link privateAgentAlias}. Placeholders
 * (`_other`, `_unknown`) pass unchanged: no agent id starts with `_`.
 */
export function agentLabel(agentId: string, isPublic: PublicAgents): string {
  if (agentId.startsWith('_')) return agentId;
  return isPublic(agentId) ? agentId : privateAgentAlias(agentId);
}
