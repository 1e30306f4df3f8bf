import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeResults } from '../../../src/services/jobs/node-results.ts';

describe('node-held job results', () => {
  it('stays under its byte cap, dropping the least recently used first', () => {
    const r = new NodeResults(100);
    assert.ok(r.put('a', 'a'.repeat(40)));
    assert.ok(r.put('b', 'b'.repeat(40)));
    assert.equal(r.get('a')?.length, 40); // a is now the most recent
    assert.ok(r.put('c', 'c'.repeat(40)));
    assert.deepEqual(r.ids().sort(), ['a', 'c']);
    assert.equal(r.get('b'), undefined);
    assert.equal(r.bytes, 80);
  });

  it('counts bytes, not characters, and refuses one result larger than the cap', () => {
    const r = new NodeResults(10);
    assert.ok(r.put('x', 'é'.repeat(5))); // 10 bytes in UTF-8
    assert.equal(r.bytes, 10);
    assert.equal(r.put('y', 'é'.repeat(6)), false);
    assert.deepEqual(r.ids(), ['x'], 'a refused result evicts nothing');
  });

  it('replacing and deleting keep the count right', () => {
    const r = new NodeResults(100);
    r.put('a', 'a'.repeat(30));
    r.put('a', 'a'.repeat(50));
    assert.equal(r.bytes, 50);
    assert.ok(r.delete('a'));
    assert.equal(r.delete('a'), false);
    assert.equal(r.bytes, 0);
  });
});
