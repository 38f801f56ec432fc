import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FinishedOffsets } from './finished-offsets.js';
import { PartitionState } from './partition-state.js';

const members = (f: FinishedOffsets | undefined, upTo: number): number[] => {
  const out: number[] = [];
  for (let o = 0; o <= upTo; o++) if (f?.has(o)) out.push(o);
  return out;
};

test('encode → decode gives back exactly the offsets above the commit when they fit, a lower subset when not', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 1_000_000 }),
      fc.uniqueArray(fc.integer({ min: 0, max: 600 }), { maxLength: 300 }),
      fc.integer({ min: 0, max: 300 }),
      (commit, rel, maxChars) => {
        const finished = rel.map((r) => commit + r);
        const above = [...new Set(finished.filter((o) => o > commit))].sort((a, b) => a - b);
        const meta = FinishedOffsets.encode(commit, finished, maxChars);
        if (meta === null) return;
        assert.ok(meta.length <= maxChars, `${meta.length} > ${maxChars}`);
        const got = FinishedOffsets.decode(commit, meta)!;
        const back = members(got, commit + 600).filter((o) => o >= commit);
        assert.deepEqual(back, above.slice(0, back.length), 'a prefix of the finished offsets, never anything else');
        assert.equal(got.size, back.length);
        if (FinishedOffsets.encode(commit, finished, Infinity)!.length <= maxChars) assert.deepEqual(back, above);
      },
    ),
  );
});

test('runs are compact: 10,000 contiguous offsets above the commit take a few characters', () => {
  const meta = FinishedOffsets.encode(
    5_000_000,
    Array.from({ length: 10_000 }, (_, i) => 5_000_001 + i),
    4000,
  )!;
  assert.ok(meta.length < 30, meta);
  assert.equal(FinishedOffsets.decode(5_000_000, meta)!.size, 10_000);
  assert.equal(FinishedOffsets.encode(7, [3, 7], 4000), null, 'nothing above the commit: no metadata');
  assert.equal(FinishedOffsets.encode(7, [9, 10], 10), null, 'not even one run fits');
});

test('decode ignores metadata of another commit offset, of other writers and malformed runs', () => {
  const meta = FinishedOffsets.encode(100, [102, 103, 110], 4000)!;
  assert.deepEqual(members(FinishedOffsets.decode(100, meta), 200), [102, 103, 110]);
  assert.equal(FinishedOffsets.decode(101, meta), undefined, 'the commit moved (an offset reset): stale');
  for (const bad of [
    null,
    '',
    'hello',
    'mesh-fo1:2s',
    'mesh-fo1:2s:',
    'mesh-fo1:2s:5,3',
    'mesh-fo1:2s:0',
    'mesh-fo1:2s:4-2',
    'mesh-fo1:2s:X',
  ]) {
    assert.equal(FinishedOffsets.decode(100, bad), undefined, String(bad));
  }
});

test('a partition commits when the commit point moves, or when what finished above it changes', () => {
  const s = new PartitionState('t', 0, 0);
  for (const o of [0, 1, 2, 3]) s.tracker.add(o);
  s.tracker.complete(0);
  const first = s.pendingCommit(4000)!;
  assert.deepEqual([first.offset, first.metadata], [1, null]);
  s.committedTo(first);
  assert.equal(s.pendingCommit(4000), undefined, 'nothing changed');
  s.tracker.complete(3);
  const second = s.pendingCommit(4000)!;
  assert.equal(second.offset, 1, 'commit point unchanged (1 runs)');
  assert.deepEqual(members(FinishedOffsets.decode(1, second.metadata), 10), [3]);
  assert.equal(s.pendingCommit(0), undefined, 'without metadata only a moved commit point is worth a commit');
  s.committedTo(second);
  assert.equal(s.pendingCommit(4000), undefined);
  s.tracker.complete(1);
  s.tracker.complete(2);
  assert.deepEqual(s.pendingCommit(4000), { offset: 4, metadata: null, completed: 4 });
});
