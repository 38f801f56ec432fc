import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelKey, DEFAULT_CHANNEL_KEY_TEMPLATE, TENANT_CHANNEL_KEY_TEMPLATE } from './channel-key.js';

const fields = { tenant: 'acme', agent_id: 'refund-agent', context_id: 'ctx-1', task_id: 'task-1' };

test('the default template keys by tenant, agent and context', () => {
  assert.equal(ChannelKey.parse().render(fields), 'acme:refund-agent:ctx-1');
  assert.equal(ChannelKey.parse(DEFAULT_CHANNEL_KEY_TEMPLATE).template, '{tenant}:{agent_id}:{context_id}');
  assert.equal(ChannelKey.parse(TENANT_CHANNEL_KEY_TEMPLATE).render(fields), 'acme:refund-agent');
});

test("the default gives one tenant's contexts different keys and every turn of one context the same", () => {
  const key = ChannelKey.parse();
  const contexts = Array.from({ length: 20 }, (_, i) => key.render({ ...fields, context_id: `ctx-${i}`, task_id: `task-${i}` }));
  assert.equal(new Set(contexts).size, 20);
  // A follow-up, a resume or a cancel of a task carries its task's context: the same key.
  assert.equal(key.render({ ...fields, task_id: 'task-2' }), key.render(fields));
});

test('custom templates render every placeholder and literal', () => {
  assert.equal(ChannelKey.parse('{tenant}:{agent_id}:{context_id}').render(fields), 'acme:refund-agent:ctx-1');
  assert.equal(ChannelKey.parse('t={tenant}/k={task_id}').render(fields), 't=acme/k=task-1');
});

test('templates without {tenant}, with unknown placeholders or broken braces are refused', () => {
  assert.throws(() => ChannelKey.parse('{agent_id}'), /must contain \{tenant\}/);
  assert.throws(() => ChannelKey.parse('{tenant}:{user}'), /unknown placeholder \{user\}/);
  assert.throws(() => ChannelKey.parse('{tenant}:{agent_id'), /unbalanced brace/);
  assert.throws(() => ChannelKey.parse(''), /non-empty/);
  assert.throws(() => ChannelKey.parse('{tenant}:{context}'), /unknown placeholder \{context\}; allowed: .*\{context_id\}/);
});
