export * from './dispatcher.app.js';
export * from './config/dispatcher.config.js';
export * from './database/migrations/index.js';
export { REQUEST_TIMEOUT_HEADER } from './a2a/a2a-time.headers.js';
export type { CommandProducer, OutboxCommand, SendOutcome } from './outbox/command-producer.js';
/** The A2A 0.3 request shapes the dispatcher accepts (its fuzz spec walks them). */
export { LEGACY_BODIES, LEGACY_PARAMS } from './a2a/a2a-legacy.schemas.js';
export { TaskCommitFeed, TaskCommitSignal } from './tasks/task-commit-feed.js';
export { SweepLease } from './fleet/sweep-lease.js';
export { TOOL_AUDIENCE_POLICY, anyToolAudience, type ToolAudiencePolicy } from './grants/tool-audience.policy.js';
