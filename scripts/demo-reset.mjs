#!/usr/bin/env node
// `npm run demo:reset`: the demo invoices as they were before any refund, so the README's refund
// example answers `refunded` again (refunds are kept across `npm start`, as a real ledger would be).
// Touches only billing-tools' demo schema; tasks, ledgers and agents stay.
import pg from 'pg';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/agent_mesh';
const client = new pg.Client({ connectionString: url });
try {
  await client.connect();
  const exists = await client.query(`SELECT to_regclass('billing.refunds') IS NOT NULL AS present`);
  if (!exists.rows[0].present) {
    console.log('demo:reset: no demo billing data yet (run npm start once); nothing to reset');
  } else {
    const { rowCount } = await client.query('DELETE FROM billing.refunds');
    console.log(`demo:reset: ${rowCount} demo refund(s) removed; every demo invoice is refundable again`);
  }
} catch (err) {
  console.error(`demo:reset: cannot use Postgres at ${url.replace(/\/\/[^@]*@/, '//')}: ${err instanceof Error ? err.message : err}`);
  process.exitCode = 1;
} finally {
  await client.end().catch(() => undefined);
}
