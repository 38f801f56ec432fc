export { type SlotSupplier, SemaphoreSlotSupplier } from './slot-supplier.js';
export type { EffectEntry, EffectLedger } from './effect-ledger.js';
export { PostgresEffectLedger } from './postgres-effect-ledger.js';
export { McpConnection } from './mcp-connection.js';
export { ToolMeta } from './tool-meta.js';
export { verifyToolTokenClaims, verifyToolToken, type ToolTokenClaims, HmacToolTokenMinter } from './tool-token.js';
export { RetryBudget } from './retry-budget.js';
export { type ToolCallScope, type ToolGatewayOptions, ToolGateway } from './tool-gateway.js';
export { Reconciler } from './reconciler.js';
