/** Agents and skill versions, each row owned by one key. */
import type { AgentTable, Db, SkillTable } from './schema.ts';

export async function putAgent(db: Db, row: AgentTable): Promise<void> {
  await db.insertInto('agents').values(row)
    .onConflict((oc) => oc.columns(['owner', 'name']).doUpdateSet({ config: row.config, updated_at: row.updated_at })).execute();
}
export const getAgent = (db: Db, owner: string, name: string) =>
  db.selectFrom('agents').selectAll().where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
export const listAgents = (db: Db, owner: string) =>
  db.selectFrom('agents').selectAll().where('owner', '=', owner).orderBy('name').execute();
export async function deleteAgent(db: Db, owner: string, name: string): Promise<boolean> {
  const r = await db.deleteFrom('agents').where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Adds the next version of a skill (1 for a new name) and returns it. */
export async function addSkillVersion(db: Db, row: Omit<SkillTable, 'version'>): Promise<SkillTable> {
  return db.transaction().execute(async (trx) => {
    const last = await trx.selectFrom('skills').select((eb) => eb.fn.max('version').as('v')).where('owner', '=', row.owner).where(
      'name',
      '=',
      row.name,
    ).executeTakeFirst();
    const full = { ...row, version: Number(last?.v ?? 0) + 1 };
    await trx.insertInto('skills').values(full).execute();
    return full;
  });
}
export async function getSkill(db: Db, owner: string, name: string, version?: number): Promise<SkillTable | undefined> {
  let q = db.selectFrom('skills').selectAll().where('owner', '=', owner).where('name', '=', name);
  q = version === undefined ? q.orderBy('version', 'desc').limit(1) : q.where('version', '=', version);
  return q.executeTakeFirst();
}
export const skillVersions = (db: Db, owner: string, name: string) =>
  db.selectFrom('skills').selectAll().where('owner', '=', owner).where('name', '=', name).orderBy('version').execute();
/** The latest version of every skill of a key. */
export async function listSkills(db: Db, owner: string): Promise<SkillTable[]> {
  const rows = await db.selectFrom('skills').selectAll().where('owner', '=', owner).orderBy('name').orderBy('version', 'desc').execute();
  const seen = new Set<string>();
  return rows.filter((r) => !seen.has(r.name) && (seen.add(r.name), true));
}
export async function deleteSkill(db: Db, owner: string, name: string): Promise<boolean> {
  const r = await db.deleteFrom('skills').where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
