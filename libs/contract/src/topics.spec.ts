import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsumerGroups, DEFAULT_COMMAND_PARTITIONS, DEFAULT_EVENTS_PARTITIONS, TopicDefinitions, TopicNames } from './topics.js';

test('group names stay what running deployments already committed offsets under', () => {
  const g = new ConsumerGroups('p.');
  assert.equal(g.agentWorkers('refund-agent'), 'p.agents.refund-agent');
  assert.ok(g.agentWorkers('refund-agent').startsWith(g.agentWorkersPrefix()));
  assert.equal(g.dispatcherProjector(), 'p.mesh.dispatcher.projector');
  assert.equal(g.dispatcherCatalog(), 'p.dispatcher-catalog');
  assert.equal(g.directoryHeartbeats('agent-mesh'), 'p.agent-mesh-directory-heartbeats');
  assert.throws(() => g.agentWorkers('Bad Id'), /invalid agent id/);
  assert.throws(() => new ConsumerGroups('no spaces'), /invalid topic prefix/);
});

test('every topic has one definition: keyed topics never grow; events partitions and replication come from the layout', () => {
  const d = new TopicDefinitions(new TopicNames('p.'), { eventsPartitions: 5, replicationFactor: 3 });
  assert.deepEqual(d.events(), { name: 'p.mesh.task.events', partitions: 5, configEntries: [], grow: false, replicationFactor: 3 });
  assert.deepEqual(d.teamEvents(), { name: 'p.mesh.team.events', partitions: 5, configEntries: [], grow: false, replicationFactor: 3 });
  assert.equal(d.commands('echo-agent', 7).partitions, 7);
  assert.equal(d.commands('echo-agent').partitions, DEFAULT_COMMAND_PARTITIONS);
  assert.deepEqual(
    d.cards().configEntries.map((e) => e.name),
    ['cleanup.policy', 'min.compaction.lag.ms'],
  );
  assert.deepEqual(d.heartbeats().configEntries, [{ name: 'retention.ms', value: '3600000' }]);
  assert.equal(d.deadLetters(d.names.commands('echo-agent')).name, 'p.mesh.agent.echo-agent.commands.dlq');
  for (const t of [d.events(), d.teamEvents(), d.cards(), d.heartbeats(), d.commands('echo-agent'), d.deadLetters('x')]) {
    assert.equal(t.grow, false, t.name);
    assert.equal(t.replicationFactor, 3, t.name);
  }
  // Unconfigured: the default partitions and the broker's replication factor.
  const plain = new TopicDefinitions('');
  assert.equal(plain.events().partitions, DEFAULT_EVENTS_PARTITIONS);
  assert.equal('replicationFactor' in plain.events(), false);
});
