import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChannelKey, DEFAULT_CHANNEL_KEY_TEMPLATE } from './channel-key.js';

const fields = { tenant: 'acme', agent_id: 'refund-agent', context_id: 'ctx-1', task_id: 'task-1' };

test('default template keys by tenant and agent', () => {
  assert.equal(ChannelKey.parse().render(fields), 'acme:refund-agent');
  assert.equal(ChannelKey.parse(DEFAULT_CHANNEL_KEY_TEMPLATE).template, '{tenant}:{agent_id}');
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
});
