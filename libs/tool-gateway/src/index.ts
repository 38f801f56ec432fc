export { type SlotSupplier, SemaphoreSlotSupplier } from './slot-supplier.js';
export type { EffectEntry, EffectLedger, NewEffect } from './effect-ledger.js';
export { PostgresEffectLedger } from './postgres-effect-ledger.js';
export { McpConnection, type McpConnectionOptions, type NegotiatedProtocol, type ToolInfo } from './mcp-connection.js';
export { McpSessionPool } from './mcp-session-pool.js';
export { normaliseCallResult, normaliseInputSchema, type ToolCallResult } from './mcp-shapes.js';
export { ToolMeta } from './tool-meta.js';
export {
  verifyToolTokenClaims,
  verifyToolToken,
  type ToolTokenClaims,
  type CallTokenClaims,
  type ConnectionTokenClaims,
  type ToolTokenMinter,
  HmacToolTokenMinter,
  type ToolTokenVerifier,
  hmacToolTokenVerifier,
  createToolTokenVerifier,
  anyToolTokenVerifier,
  type JwksToolTokenOptions,
} from './tool-token.js';
export { GrantExchangeMinter, type GrantExchangeOptions, usableUntil } from './grant-exchange.js';
export { RetryBudget } from './retry-budget.js';
export { type ToolCallScope, type ToolGatewayOptions, ToolGateway } from './tool-gateway.js';
export type { ReconcilerOptions } from './reconciler.js';
export { httpFetch, type FetchLike, type HttpFetchOptions } from './http-fetch.js';
