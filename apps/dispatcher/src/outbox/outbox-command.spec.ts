import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { recordBatchBytes } from '@mesh/bus';
import { DEFAULT_CHANNEL_KEY_TEMPLATE, Envelopes, TopicNames, type AgentRecord, type Identity } from '@mesh/contract';
import { CommandTooLargeError, OutboxCommands } from './outbox-command.js';

const agent = { id: 'echo', channel: { keyTemplate: '{tenant}:{agent_id}', partitions: 2 } } as AgentRecord;
const identity: Identity = {
  tenant: 'acme',
  agentId: 'echo',
  taskId: 't1',
  contextId: 'c1',
  messageId: 'm1',
  executionId: 'acme:t1:1',
  subject: 'alice',
  actor: 'alice',
};
const run = (text: string) => Envelopes.run(identity, { turn: 1, message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text }] } });

test("a command is addressed to its agent's topic, keyed by its channel, and measured as the broker measures it", () => {
  const topics = new TopicNames('p.');
  const cmd = new OutboxCommands(topics, () => 1_000_000).build(agent, run('hello'));
  assert.equal(cmd.topic, topics.commands('echo'));
  assert.equal(cmd.key, 'acme:echo');
  assert.ok(recordBatchBytes(cmd.key, cmd.value, cmd.headers) < 1_000_000);
});

test('under the default template every command of one task renders its context key; other contexts differ', () => {
  const commands = new OutboxCommands(new TopicNames('p.'), () => 1_000_000);
  const byContext = { ...agent, channel: { keyTemplate: DEFAULT_CHANNEL_KEY_TEMPLATE, partitions: 4 } } as AgentRecord;
  const later = { ...identity, messageId: 'm2', executionId: 'acme:t1:2' };
  const keys = [
    commands.build(byContext, run('hello')).key,
    commands.build(byContext, Envelopes.run(later, { turn: 2, message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'more' }] } }))
      .key,
    commands.build(byContext, Envelopes.cancel(later, { reason: 'stop' })).key,
  ];
  assert.deepEqual(keys, ['acme:echo:c1', 'acme:echo:c1', 'acme:echo:c1']);
  assert.equal(
    commands.build(
      byContext,
      Envelopes.run(
        { ...identity, taskId: 't2', contextId: 'c2' },
        { turn: 1, message: { messageId: 'm3', role: 'ROLE_USER', parts: [] } },
      ),
    ).key,
    'acme:echo:c2',
  );
});

test("a command over its topic's limit is refused where it is built, with both sizes", () => {
  const commands = new OutboxCommands(new TopicNames('p.'), () => 5_000);
  assert.doesNotThrow(() => commands.build(agent, run('x'.repeat(1_000))));
  assert.throws(
    () => commands.build(agent, run('x'.repeat(5_000))),
    (err: unknown) => err instanceof CommandTooLargeError && err.commandBytes > 5_000 && err.limitBytes === 5_000,
  );
});
