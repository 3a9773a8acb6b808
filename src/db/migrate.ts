import type { DataSource } from 'typeorm';
import { isMysql } from './data-source';

const LOCK_NAME = 'creature_registry_migrations';

/** Trainers recounted per statement: each statement holds their rows' locks only briefly. */
const RECOUNT_CHUNK = 5000;

/**
 * Sets every trainer's creatures_owned to the number of its creature rows. The service keeps the
 * column exact itself (each creature create and delete changes it in its own transaction); this
 * catches rows changed by plain SQL (an import) while no instance was counting. RECOUNT_CHUNK
 * trainers at a time, by the ids that exist (ids may lie far apart: a walk of fixed id ranges up
 * to 2^40 would take hundreds of millions of statements); a row whose count is right is left
 * unwritten. A chunk that deadlocks with a creature write of a running instance (both lock
 * trainer rows and creature index ranges) is tried again, at most 3 times.
 */
async function recountCreatures(dataSource: DataSource): Promise<void> {
  const edge = `SELECT MAX(id) AS upTo FROM (SELECT id FROM trainer WHERE id > ? ORDER BY id LIMIT ${RECOUNT_CHUNK}) chunk`;
  const count = '(SELECT COUNT(*) FROM creature c WHERE c.trainer_id = trainer.id)';
  const sql = `UPDATE trainer SET creatures_owned = ${count} WHERE id > ? AND id <= ? AND creatures_owned <> ${count}`;
  for (let from = 0; ;) {
    const [row] = await dataSource.query<{ upTo: number | string | null }[]>(edge, [from]);
    if (row?.upTo === null || row?.upTo === undefined) return;
    const upTo = Number(row.upTo);
    for (let attempt = 1; ; attempt += 1) {
      try {
        await dataSource.query(sql, [from, upTo]);
        break;
      } catch (error) {
        const code = (error as { driverError?: { code?: string } }).driverError?.code;
        if (code !== 'ER_LOCK_DEADLOCK' || attempt === 3) throw error;
      }
    }
    from = upTo;
  }
}

/**
 * Runs pending migrations, then recountCreatures. On MySQL several instances may start at once:
 * a named lock makes them take turns, and the later ones find nothing left to do.
 */
export async function runMigrations(dataSource: DataSource): Promise<void> {
  if (!isMysql(dataSource)) {
    await dataSource.runMigrations({ transaction: 'each' });
    await recountCreatures(dataSource);
    return;
  }
  const runner = dataSource.createQueryRunner();
  try {
    const [row] = (await runner.query('SELECT GET_LOCK(?, 60) AS locked', [LOCK_NAME])) as { locked: number }[];
    if (Number(row?.locked) !== 1) throw new Error('Timed out waiting for another instance to finish migrating');
    try {
      await dataSource.runMigrations({ transaction: 'each' });
      await recountCreatures(dataSource);
    } finally {
      await runner.query('SELECT RELEASE_LOCK(?)', [LOCK_NAME]);
    }
  } finally {
    await runner.release();
  }
}
