// Child process of scripts/chaos.mjs: billing-tools with test hooks on. Every CHAOS_HANG_EVERY_MS
// it arms one issue_refund call to hang (before any work) for CHAOS_HANG_MS, longer than the
// workers' tool timeout, so the caller times out, retries or reconciles. Prints "ready".
import { loadBillingToolsConfig, startBillingTools } from '@mesh/app-billing-tools';

// BILLING_TOKEN_SECRET comes from scripts/chaos.mjs (the workers get the same AGENTS_TOOL_TOKEN_SECRET).
const billing = await startBillingTools(loadBillingToolsConfig({ ...process.env, BILLING_TEST_HOOKS: 'true' }));
let hangs = 0;
const timer = setInterval(
  () => {
    billing.hooks.delay('issue_refund', {
      phase: hangs % 2 ? 'before' : 'after-commit',
      ms: Number(process.env.CHAOS_HANG_MS ?? 5000),
      times: 1,
    });
    hangs += 1;
  },
  Number(process.env.CHAOS_HANG_EVERY_MS ?? 2000),
);
process.stdout.write(`ready ${billing.mcpUrl}\n`);
const stop = async () => {
  clearInterval(timer);
  process.stderr.write(`chaos-billing: armed ${hangs} hangs, issue_refund called ${billing.hooks.calls('issue_refund')} times\n`);
  await billing.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
