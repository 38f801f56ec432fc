// One worker process of bench/agents.mjs: runs echo-agent, extended (for the benchmark only) with
// a `bench` MCP server whose `wait` tool is called when the message says `/wait <ms>`.
import { defineAgent, textOf } from '@mesh/agent-sdk';
import { loadAgentsConfig, startAgents } from '@mesh/agent-runtime';
import { echoAgent } from '@mesh/app-agents';
import { runMain } from '@mesh/service';
import { integer, text } from './settings.mjs';

const benchEcho = defineAgent({
  id: echoAgent.id,
  card: echoAgent.card,
  channel: echoAgent.channel,
  mcpServers: {
    bench: {
      transport: 'http',
      url: text('BENCH_TOOLS_URL', undefined),
      maxConcurrency: 1024,
      sessions: integer('BENCH_MCP_SESSIONS', 1),
    },
  },
  handler: async (task, ctx) => {
    const m = /^\/wait (\d+)/.exec(textOf(task.parts));
    if (!m) return echoAgent.handler(task, ctx);
    const obs = await ctx.callTool({ tool: 'mcp__bench__wait', args: { ms: Number(m[1]) } });
    if (obs.status !== 'ok') return ctx.fail('wait failed');
    await ctx.artifact({ name: 'echo', parts: [{ type: 'text', text: obs.text }] });
    return ctx.complete();
  },
});

runMain('bench-worker', () => startAgents(loadAgentsConfig(), { [benchEcho.id]: benchEcho }));
