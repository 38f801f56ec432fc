import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadAgentsConfig } from './agents.config.js';

test('defaults and MCP server overrides parse; a bad override is one clear CONFIG_INVALID', () => {
  const c = loadAgentsConfig({
    AGENTS_MCP_SERVERS: '{"billing":{"url":"http://billing:8083/mcp"}}',
    AGENTS_RUN: 'refund-agent, echo-agent',
  });
  assert.deepEqual(c.AGENTS_RUN, ['refund-agent', 'echo-agent']);
  assert.equal(c.AGENTS_MCP_SERVERS.billing.url, 'http://billing:8083/mcp');
  assert.equal(c.AGENTS_PORT, 8082);
  assert.throws(() => loadAgentsConfig({ AGENTS_MCP_SERVERS: '[1,2]' }), /AGENTS_MCP_SERVERS/);
  assert.throws(() => loadAgentsConfig({ AGENTS_MCP_SERVERS: '{nope' }), /AGENTS_MCP_SERVERS/);
});
