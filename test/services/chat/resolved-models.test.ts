import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResolvedModelMemo } from '../../../src/services/chat/resolved-models.ts';

test('resolved models are remembered until the stamp changes; no stamp, no memo; failures are not kept', async () => {
  let stamp: string | undefined = 'a';
  let calls = 0;
  let fail = false;
  const memo = new ResolvedModelMemo(async () => stamp, async (name, kind) => {
    calls++;
    if (fail) throw new Error('wrong kind');
    return { name, kind, n: calls };
  });
  assert.equal((await memo.get('m', 'generation')).n, 1);
  assert.equal((await memo.get('m', 'generation')).n, 1);
  assert.equal((await memo.get('m', 'embedding')).n, 2); // per kind
  stamp = 'b'; // re-created: another manifest / record
  assert.equal((await memo.get('m', 'generation')).n, 3);
  assert.equal((await memo.get('m', 'generation')).n, 3);
  stamp = undefined; // deleted, or not local yet
  assert.equal((await memo.get('m', 'generation')).n, 4);
  assert.equal((await memo.get('m', 'generation')).n, 5);
  stamp = 'c';
  fail = true;
  await assert.rejects(memo.get('m', 'generation'), /wrong kind/);
  fail = false;
  assert.equal((await memo.get('m', 'generation')).n, 7);
  const throwing = new ResolvedModelMemo(() => {
    throw new Error('no stamp');
  }, async () => 'fresh');
  assert.equal(await throwing.get('m', 'generation'), 'fresh');
});
