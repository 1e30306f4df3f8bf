/** Stored responses (dialect A responses API) and their input items, in insertion order. */
import type { Db } from './schema.ts';

export interface StoredResponseRow {
  id: string;
  owner_id: string;
  created_at: number;
  body: string;
}

export async function insertResponse(db: Db, row: StoredResponseRow, items: { id: string; item: unknown }[]): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('responses').values(row).execute();
    // batches keep each statement under SQLite's bound-parameter limit
    for (let i = 0; i < items.length; i += 200) {
      await trx.insertInto('response_input_items')
        .values(
          items.slice(i, i + 200).map((x, j) => ({ response_id: row.id, position: i + j, item_id: x.id, item: JSON.stringify(x.item) })),
        )
        .execute();
    }
  });
}

export const getResponseRow = (db: Db, id: string) => db.selectFrom('responses').selectAll().where('id', '=', id).executeTakeFirst();

export async function deleteResponseRow(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('response_input_items').where('response_id', '=', id).execute();
    await trx.deleteFrom('responses').where('id', '=', id).execute();
  });
}

/** Every input item of a response, oldest first. */
export async function allInputItems(db: Db, id: string): Promise<unknown[]> {
  const rows = await db.selectFrom('response_input_items').select('item').where('response_id', '=', id).orderBy('position', 'asc')
    .execute();
  return rows.map((r) => JSON.parse(r.item));
}

/** One page of input items: `after` is an item id (exclusive cursor); returns up to limit + 1 rows so the caller knows has_more. */
export async function pageInputItems(db: Db, id: string, o: { order: 'asc' | 'desc'; after?: number; limit: number }) {
  let q = db.selectFrom('response_input_items').select(['position', 'item_id', 'item']).where('response_id', '=', id);
  if (o.after !== undefined) q = q.where('position', o.order === 'asc' ? '>' : '<', o.after);
  const rows = await q.orderBy('position', o.order).limit(o.limit + 1).execute();
  return rows.map((r) => ({ position: Number(r.position), id: r.item_id, item: JSON.parse(r.item) }));
}

export const inputItemPosition = async (db: Db, responseId: string, itemId: string) =>
  (await db.selectFrom('response_input_items').select('position').where('response_id', '=', responseId).where('item_id', '=', itemId)
    .executeTakeFirst())?.position;
