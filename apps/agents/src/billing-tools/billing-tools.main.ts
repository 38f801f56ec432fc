import { runMain } from '@mesh/service';
import { loadBillingToolsConfig } from './billing-tools.config.js';
import { startBillingTools } from './billing-tools.app.js';

runMain('billing-tools', async () => {
  const config = loadBillingToolsConfig();
  const running = await startBillingTools(config, { host: '0.0.0.0' });
  console.error(`billing-tools: MCP on ${running.mcpUrl}`);
  return running;
});
