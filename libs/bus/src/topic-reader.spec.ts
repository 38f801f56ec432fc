import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Admin } from 'kafkajs';
import { endOffsets } from './topic-reader.js';

/** An admin whose fetchTopicOffsets fails with the given errors first (pure logic: no broker). */
function admin(errors: Array<Error & { retriable?: boolean }>) {
  let calls = 0;
  const fake = {
    async fetchTopicOffsets() {
      calls++;
      const err = errors.shift();
      if (err) throw err;
      return [{ partition: 0, offset: '5', high: '5', low: '0' }];
    },
  };
  return { admin: fake as unknown as Admin, calls: () => calls };
}

test('end offsets: a retriable answer (a topic just created elsewhere) is asked again; anything else fails at once', async () => {
  const notLeader = Object.assign(new Error('This server is not the leader for that topic-partition'), { retriable: true });
  const retried = admin([notLeader, notLeader]);
  assert.deepEqual(await endOffsets(retried.admin, 't'), [{ partition: 0, offset: '5', high: '5', low: '0' }]);
  assert.equal(retried.calls(), 3);
  const denied = admin([Object.assign(new Error('Topic authorization failed'), { retriable: false })]);
  await assert.rejects(endOffsets(denied.admin, 't'), /authorization/);
  assert.equal(denied.calls(), 1);
});
