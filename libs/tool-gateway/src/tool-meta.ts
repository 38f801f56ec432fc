/** Keys the gateway puts in a tool call's `_meta` (prefixed as MCP recommends for custom keys). */
export const ToolMeta = {
  idempotencyKey: 'mesh/idempotency_key',
  tenant: 'mesh/tenant',
  subject: 'mesh/subject',
  taskId: 'mesh/task_id',
  /** Short-lived audience-bound JWT, only for servers configured with `tokenAudience`. */
  token: 'mesh/token',
} as const;
