import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defineAgent, parseToolName, toolName } from './agent-definition.js';
import { Outcomes, textOf } from './agent-task.js';

test('defineAgent fills channel defaults and refuses bad ids and server names', () => {
  const def = defineAgent({ id: 'echo-agent', card: { name: 'Echo' }, handler: async (_t, ctx) => ctx.complete() });
  assert.equal(def.channel.keyTemplate, '{tenant}:{agent_id}:{context_id}');
  assert.equal(def.channel.keyTemplateNamed, false);
  const named = defineAgent({
    id: 'echo-agent',
    card: { name: 'Echo' },
    channel: { keyTemplate: '{tenant}:{agent_id}' },
    handler: async (_t, ctx) => ctx.complete(),
  });
  assert.equal(named.channel.keyTemplate, '{tenant}:{agent_id}');
  assert.equal(named.channel.keyTemplateNamed, true);
  assert.throws(
    () =>
      defineAgent({
        id: 'echo-agent',
        card: { name: 'Echo' },
        channel: { keyTemplate: '{agent_id}:{context_id}' },
        handler: async (_t, ctx) => ctx.complete(),
      }),
    /agent "echo-agent": key template must contain \{tenant\}/,
  );
  assert.equal(def.channel.visibility, 'tenant');
  assert.throws(() => defineAgent({ id: 'Bad Id', card: { name: 'x' }, handler: async () => Outcomes.completed() }), /invalid agent id/);
  assert.throws(
    () =>
      defineAgent({
        id: 'a',
        card: { name: 'x' },
        mcpServers: { bad_name: { transport: 'http', url: 'http://x' } },
        handler: async () => Outcomes.completed(),
      }),
    /invalid MCP server name/,
  );
  for (const sessions of [0, 65, 1.5])
    assert.throws(
      () =>
        defineAgent({
          id: 'a',
          card: { name: 'x' },
          mcpServers: { tools: { transport: 'http', url: 'http://x', sessions } },
          handler: async () => Outcomes.completed(),
        }),
      /sessions must be an integer from 1 to 64/,
    );
});

test('tool names round-trip through the mcp__{server}__{tool} namespace', () => {
  assert.equal(toolName('billing', 'issue_refund'), 'mcp__billing__issue_refund');
  assert.deepEqual(parseToolName('mcp__billing__issue_refund'), { server: 'billing', tool: 'issue_refund' });
  assert.equal(parseToolName('issue_refund'), undefined);
});

test('textOf joins text parts only', () => {
  assert.equal(
    textOf([
      { type: 'text', text: 'a' },
      { type: 'data', data: {} },
      { type: 'text', text: 'b' },
    ]),
    'a\nb',
  );
});
