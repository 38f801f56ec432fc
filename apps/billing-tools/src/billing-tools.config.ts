import { z } from 'zod';
import { BillingTools } from '@mesh/contract';
import { databaseSpec, flag, httpSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';

/** Environment of the billing-tools MCP server. */
export const billingToolsConfigSpec = {
  ...databaseSpec,
  ...httpSpec,
  BILLING_TOOLS_PORT: port(BillingTools.port),
  /** Allows tests to make tools hang or slow down (never enable in production). */
  BILLING_TEST_HOOKS: flag(false),
  /**
   * HS256 secret of the tool tokens (the agents' AGENTS_TOOL_TOKEN_SECRET). Required: every request
   * must carry a token minted for BILLING_TOKEN_AUDIENCE, and tenant and subject come only from it.
   */
  BILLING_TOKEN_SECRET: z
    .string({ error: 'required: the HS256 secret shared with the agents (AGENTS_TOOL_TOKEN_SECRET), at least 16 characters' })
    .min(16, 'at least 16 characters'),
  BILLING_TOKEN_AUDIENCE: z.string().min(1).default(BillingTools.audience),
  /** Open MCP sessions at most; a new session over the cap is refused with 503 until one ends or expires. */
  BILLING_TOOLS_MAX_SESSIONS: positiveInt(100),
  /** A session without a request (and no open stream) for this long is closed. */
  BILLING_TOOLS_SESSION_IDLE_MS: positiveInt(300_000),
};

export type BillingToolsConfig = ConfigOf<typeof billingToolsConfigSpec>;

export function loadBillingToolsConfig(env: NodeJS.ProcessEnv = process.env): BillingToolsConfig {
  return loadConfig(billingToolsConfigSpec, env);
}
