/** Area tickets and two-factor rows of the admin console. */
import type { AdminTwoFactorTable, AreaTicketTable, Db } from './schema.ts';

export type AreaTicketRow = AreaTicketTable;
export type TwoFactorRow = AdminTwoFactorTable;

export const insertTicket = (db: Db, row: AreaTicketRow) => db.insertInto('area_tickets').values(row).execute();

export const findTicket = (db: Db, idHash: string) =>
  db.selectFrom('area_tickets').selectAll().where('id_hash', '=', idHash).executeTakeFirst();

export const deleteTicket = (db: Db, idHash: string) => db.deleteFrom('area_tickets').where('id_hash', '=', idHash).execute();

export const deleteTicketsOfKey = (db: Db, keyId: string) => db.deleteFrom('area_tickets').where('key_id', '=', keyId).execute();

export const deleteExpiredTickets = (db: Db, now: number) => db.deleteFrom('area_tickets').where('expires_at', '<=', now).execute();

export const findTwoFactor = (db: Db, keyId: string) =>
  db.selectFrom('admin_two_factor').selectAll().where('key_id', '=', keyId).executeTakeFirst();

export const saveTwoFactor = (db: Db, row: TwoFactorRow) =>
  db.insertInto('admin_two_factor').values(row)
    .onConflict((oc) =>
      oc.column('key_id').doUpdateSet({
        secret: row.secret,
        confirmed_at: row.confirmed_at,
        recovery_hashes: row.recovery_hashes,
        last_step: row.last_step,
        created_at: row.created_at,
      })
    ).execute();

export const deleteTwoFactor = (db: Db, keyId: string) => db.deleteFrom('admin_two_factor').where('key_id', '=', keyId).execute();

/** Compare-and-set of the state a sign-in consumed (a TOTP step or a recovery code), so two racing uses cannot both win. */
export async function consumeTwoFactor(
  db: Db,
  keyId: string,
  before: { recovery_hashes: string; last_step: number | null },
  after: { recovery_hashes: string; last_step: number | null },
): Promise<boolean> {
  let q = db.updateTable('admin_two_factor').set(after).where('key_id', '=', keyId).where('recovery_hashes', '=', before.recovery_hashes);
  q = before.last_step == null ? q.where('last_step', 'is', null) : q.where('last_step', '=', before.last_step);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
