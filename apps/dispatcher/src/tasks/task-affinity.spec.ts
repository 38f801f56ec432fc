import { test } from 'node:test';
import assert from 'node:assert/strict';
import { partitionOfKey } from '@mesh/bus';
import { TaskAffinity } from './task-affinity.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Where the agents' producers send a task's events (equal to kafkajs' DefaultPartitioner: key-partitioner.spec in @mesh/bus). */
const kafkaPartition = (taskId: string, partitions: number) => partitionOfKey(taskId, partitions);

test('new task ids land on the partitions projected here, as the producers partition them; they stay random UUIDs', () => {
  const affinity = new TaskAffinity();
  affinity.partitions(6);
  affinity.assigned([1, 4]);
  const ids = Array.from({ length: 300 }, () => affinity.newTaskId());
  for (const id of ids) {
    assert.match(id, UUID);
    assert.ok([1, 4].includes(kafkaPartition(id, 6)), `${id} is projected elsewhere`);
  }
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual(new Set(ids.map((id) => kafkaPartition(id, 6))), new Set([1, 4]), 'both local partitions are used');
});

test('any id while the assignment or the partition count is unknown, or when every partition is here', () => {
  const spread = (affinity: TaskAffinity, partitions: number) =>
    new Set(Array.from({ length: 200 }, () => kafkaPartition(affinity.newTaskId(), partitions))).size;
  const unknown = new TaskAffinity();
  assert.equal(spread(unknown, 3), 3, 'nothing assigned yet');
  const noCount = new TaskAffinity();
  noCount.assigned([0]);
  assert.equal(spread(noCount, 3), 3, 'partition count unknown');
  const all = new TaskAffinity();
  all.partitions(3);
  all.assigned([0, 1, 2]);
  assert.equal(spread(all, 3), 3, 'one replica projects everything');
  const left = new TaskAffinity();
  left.partitions(3);
  left.assigned([2]);
  left.assigned([]); // revoked, none assigned after the rebalance
  assert.equal(spread(left, 3), 3);
});
