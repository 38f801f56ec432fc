import { runMain } from '@mesh/service';
import { startTelemetry } from '@mesh/telemetry';
import { loadBillingToolsConfig } from './billing-tools.config.js';
import { startBillingTools } from './billing-tools.app.js';

// Tracing before anything serves (ESM imports above are hoisted anyway).
startTelemetry({ serviceName: 'billing-tools' });

runMain('billing-tools', async (logger) => {
  const config = loadBillingToolsConfig();
  const running = await startBillingTools(config);
  logger.info({ mcpUrl: running.mcpUrl }, `MCP on ${running.mcpUrl}`);
  return running;
});
