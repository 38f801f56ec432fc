import { z } from 'zod';
import { BillingTools, MeshError } from '@mesh/contract';
import { anyToolTokenVerifier, createToolTokenVerifier, hmacToolTokenVerifier, type ToolTokenVerifier } from '@mesh/tool-gateway';
import { databaseSpec, flag, httpSpec, loadConfig, port, positiveInt, type ConfigOf } from '@mesh/config';

/** Environment of the billing-tools MCP server. */
export const billingToolsConfigSpec = {
  ...databaseSpec,
  ...httpSpec,
  BILLING_TOOLS_PORT: port(BillingTools.port),
  /** Allows tests to make tools hang or slow down (never enable in production). */
  BILLING_TEST_HOOKS: flag(false),
  /**
   * The dispatcher's JWKS (…/.well-known/jwks.json): tokens its token endpoint issued for
   * BILLING_TOKEN_AUDIENCE are accepted (docs/billing-tools.md). This or BILLING_TOKEN_SECRET is
   * required: every request must carry a token, and tenant and subject come only from it.
   */
  BILLING_TOOLS_JWKS_URL: z.string().url().optional(),
  /** The dispatcher's issuer (its DISPATCHER_ISSUER); required with BILLING_TOOLS_JWKS_URL. */
  BILLING_TOOLS_TOKEN_ISSUER: z.string().min(1).optional(),
  /** Legacy: HS256 secret of tool tokens minted by trusted platform workers (their AGENTS_TOOL_TOKEN_SECRET). */
  BILLING_TOKEN_SECRET: z.string().min(16, 'at least 16 characters').optional(),
  BILLING_TOKEN_AUDIENCE: z.string().min(1).default(BillingTools.audience),
  /** Open MCP sessions at most; a new session over the cap is refused with 503 until one ends or expires. */
  BILLING_TOOLS_MAX_SESSIONS: positiveInt(100),
  /** A session without a request (and no open stream) for this long is closed. */
  BILLING_TOOLS_SESSION_IDLE_MS: positiveInt(300_000),
};

export type BillingToolsConfig = ConfigOf<typeof billingToolsConfigSpec>;

export function loadBillingToolsConfig(env: NodeJS.ProcessEnv = process.env): BillingToolsConfig {
  const config = loadConfig(billingToolsConfigSpec, env);
  if (!config.BILLING_TOOLS_JWKS_URL && !config.BILLING_TOKEN_SECRET)
    throw new MeshError(
      'CONFIG_INVALID',
      "BILLING_TOOLS_JWKS_URL (the dispatcher's …/.well-known/jwks.json, with BILLING_TOOLS_TOKEN_ISSUER) or BILLING_TOKEN_SECRET is required: every request needs a verifiable token",
    );
  if (config.BILLING_TOOLS_JWKS_URL && !config.BILLING_TOOLS_TOKEN_ISSUER)
    throw new MeshError(
      'CONFIG_INVALID',
      "BILLING_TOOLS_TOKEN_ISSUER is required with BILLING_TOOLS_JWKS_URL: the dispatcher's DISPATCHER_ISSUER",
    );
  return config;
}

/** The verifier of the tool tokens BILLING_TOKEN_AUDIENCE accepts: the dispatcher's (JWKS), the shared secret's, or both. */
export function billingTokenVerifier(config: BillingToolsConfig): ToolTokenVerifier {
  const audience = config.BILLING_TOKEN_AUDIENCE;
  const verifiers: ToolTokenVerifier[] = [];
  if (config.BILLING_TOOLS_JWKS_URL && config.BILLING_TOOLS_TOKEN_ISSUER)
    verifiers.push(
      createToolTokenVerifier({ jwksUrl: config.BILLING_TOOLS_JWKS_URL, issuer: config.BILLING_TOOLS_TOKEN_ISSUER, audience }),
    );
  if (config.BILLING_TOKEN_SECRET) verifiers.push(hmacToolTokenVerifier(config.BILLING_TOKEN_SECRET, audience));
  return anyToolTokenVerifier(verifiers);
}
