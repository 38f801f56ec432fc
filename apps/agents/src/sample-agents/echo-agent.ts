import { createRequire } from 'node:module';
import { defineAgent, textOf, type McpServerSpec } from '@mesh/agent-sdk';

/** The reference MCP server from npm (a devDependency), over stdio; only started when a turn uses it. */
function everythingServer(): McpServerSpec {
  let entry = '@modelcontextprotocol/server-everything/dist/index.js';
  try {
    entry = createRequire(import.meta.url).resolve(entry);
  } catch {
    // not installed (production install without dev dependencies): a call to it fails clearly
  }
  return { transport: 'stdio', command: process.execPath, args: [entry, 'stdio'] };
}

/**
 * Answers at once with an artifact echoing the message (benchmarks, quickstart). A message starting
 * with `/everything ` is echoed through the reference MCP server's `echo` tool instead.
 */
export const echoAgent = defineAgent({
  id: 'echo-agent',
  card: {
    name: 'Echo Agent',
    description: 'Echoes every message back as an artifact.',
    version: '1.0.0',
    capabilities: { streaming: true },
    skills: [{ id: 'echo', name: 'Echo', description: 'Repeats the message', tags: ['echo', 'test'] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
  },
  // An echo turn costs no wait of its own: many in flight let the ledger statements and the event
  // requests of a backlog carry many turns each (docs/benchmarks.md, "Worker turns").
  channel: { visibility: 'public', maxInFlight: 1024 },
  mcpServers: { everything: everythingServer() },
  handler: async (task, ctx) => {
    const text = textOf(task.parts);
    if (text.startsWith('/everything ')) {
      const obs = await ctx.callTool({ tool: 'mcp__everything__echo', args: { message: text.slice('/everything '.length) } });
      if (obs.status === 'unknown') return ctx.fail(`the echo tool did not answer: ${obs.reason}`);
      if (obs.status === 'error') return ctx.fail(`the echo tool failed: ${obs.text}`);
      await ctx.artifact({ name: 'echo', parts: [{ type: 'text', text: obs.text }] });
      return ctx.complete();
    }
    await ctx.artifact({ name: 'echo', parts: task.parts.length > 0 ? task.parts : [{ type: 'text', text: '' }] });
    return ctx.complete();
  },
});
