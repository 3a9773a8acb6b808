import type { DataSource } from 'typeorm';
import { isMysql } from './data-source';

const LOCK_NAME = 'creature_registry_migrations';

/**
 * Runs pending migrations. On MySQL several instances may start at once: a named lock makes them
 * take turns, and the later ones find nothing left to do. Nothing else runs at start: counts
 * after rows changed by plain SQL are `npm run reconcile`'s.
 */
export async function runMigrations(dataSource: DataSource): Promise<void> {
  if (!isMysql(dataSource)) {
    await dataSource.runMigrations({ transaction: 'each' });
    return;
  }
  const runner = dataSource.createQueryRunner();
  try {
    const [row] = (await runner.query('SELECT GET_LOCK(?, 60) AS locked', [LOCK_NAME])) as { locked: number }[];
    if (Number(row?.locked) !== 1) throw new Error('Timed out waiting for another instance to finish migrating');
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT RELEASE_LOCK(?)', [LOCK_NAME]);
    }
  } finally {
    await runner.release();
  }
}
