import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../../src/store/db.ts';
import { migrate, migrations } from '../../src/store/migrations.ts';
import { loadNodeTag } from '../../src/store/node-tag.ts';
import { tempDir } from '../support/server.ts';

test('migrations apply once and running them again is harmless', async () => {
  const dir = await tempDir();
  const url = `file:${join(dir, 'nested', 'svc.db')}`;
  const a = await openStore(url);
  await a.db.insertInto('settings').values({ key: 'k', value: '1', updated_at: 1 }).execute();
  assert.deepEqual(await migrate(a.db), [], 'nothing left to apply');
  await a.close();
  const b = await openStore(url); // a second start on the same file
  const rows = await b.db.selectFrom('settings').selectAll().execute();
  assert.equal(rows.length, 1, 'data survives a restart');
  const applied = await b.db.selectFrom('schema_migrations' as never).selectAll().execute();
  assert.equal(applied.length, migrations.length);
  await b.close();
  await rm(dir, { recursive: true });
});

test('the node tag is six characters, generated once and persisted', async () => {
  const dir = await tempDir();
  const t1 = await loadNodeTag(dir);
  assert.match(t1, /^[a-z0-9]{6}$/);
  assert.equal(await loadNodeTag(dir), t1);
  await rm(dir, { recursive: true });
});
