import type { MigrationInterface } from 'typeorm';
import { CreateBilling1764490000001 } from './1764490000001-create-billing.js';
import { RefundKeysPerTenant1764490000002 } from './1764490000002-refund-keys-per-tenant.js';

/** Postgres schema owned by billing-tools (its own process, its own schema). */
export const BILLING_SCHEMA = 'billing';

/** Ordered migrations of the billing schema. */
export const billingMigrations: Array<new () => MigrationInterface> = [CreateBilling1764490000001, RefundKeysPerTenant1764490000002];
