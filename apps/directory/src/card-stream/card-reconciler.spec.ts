import { test } from 'node:test';
import assert from 'node:assert/strict';
import { divergence } from './card-reconciler.js';

const at = (clusterId: string, endOffsets: number[] | null) => ({ clusterId, endOffsets });

test('the cards topic is behind the database when it is missing, on another cluster, short of records or moved back', () => {
  assert.match(divergence(undefined, at('c1', null), 0)!, /does not exist/);
  assert.match(divergence(at('c1', [5, 5]), at('c2', [9, 9]), 3)!, /cluster changed/);
  assert.match(divergence(undefined, at('c1', [1, 0, 1]), 3)!, /holds 2 records for 3 agents/);
  assert.match(divergence(at('c1', [4, 6]), at('c1', [5, 2]), 3)!, /partition 1 .*moved back/);
  assert.match(divergence(at('c1', [4, 6]), at('c1', [4, 6, 0]), 3)!, /partitions/);
});

test('a topic that only grew, on the same cluster, holding a record per agent, is in line', () => {
  assert.equal(divergence(undefined, at('c1', [2, 1]), 3), undefined);
  assert.equal(divergence(at('c1', [2, 1]), at('c1', [2, 7]), 3), undefined);
  assert.equal(divergence(undefined, at('c1', [0]), 0), undefined, 'an empty directory needs nothing');
});
