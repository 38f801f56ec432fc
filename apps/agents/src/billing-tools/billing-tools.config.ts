import { z } from 'zod';
import { databaseSpec, flag, loadConfig, port, type ConfigOf } from '@mesh/config';

/** Environment of the billing-tools MCP server. */
export const billingToolsConfigSpec = {
  ...databaseSpec,
  BILLING_TOOLS_PORT: port(8083),
  /** Allows tests to make tools hang or slow down (never enable in production). */
  BILLING_TEST_HOOKS: flag(false),
  /** When set, every call must carry a token minted for BILLING_TOKEN_AUDIENCE with this secret. */
  BILLING_TOKEN_SECRET: z.string().min(16).optional(),
  BILLING_TOKEN_AUDIENCE: z.string().min(1).default('billing-tools'),
};

export type BillingToolsConfig = ConfigOf<typeof billingToolsConfigSpec>;

export function loadBillingToolsConfig(env: NodeJS.ProcessEnv = process.env): BillingToolsConfig {
  return loadConfig(billingToolsConfigSpec, env);
}
