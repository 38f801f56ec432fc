export { startBillingTools, type RunningBillingTools } from './billing-tools.app.js';
export { billingToolsConfigSpec, loadBillingToolsConfig, type BillingToolsConfig } from './billing-tools.config.js';
export { BillingHooks, type HookPhase } from './billing-hooks.js';
export { billingMigrations, BILLING_SCHEMA } from './migrations/index.js';
