import { randomUUID } from 'node:crypto';
import { MigrationExecutor, type DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { createDataSource, isMysql } from './data-source';
import {
  CREATE_MIGRATION_LOCK,
  MIGRATION_LOCK_STALE_S,
  RELEASE_MIGRATION_LOCK,
  RENEW_MIGRATION_LOCK,
  TAKE_MIGRATION_LOCK,
  TAKE_OVER_STALE_MIGRATION_LOCK,
} from './data-source.queries';
import { isLockConflict, uniqueViolation } from './errors';

/** How long an instance waits for another to finish migrating before it gives up (and does not start). */
const MIGRATION_LOCK_WAIT_MS = 120_000;

/** A start with MIGRATE_ON_START=false against a database whose schema is older than the code. */
export class PendingMigrationsError extends Error {
  constructor(readonly pending: readonly string[]) {
    super(
      `The database schema is behind: ${pending.length} pending migration(s) (${pending.join(', ')}). ` +
        'Run `npm run migrate`, or start with MIGRATE_ON_START=true',
    );
    this.name = 'PendingMigrationsError';
  }
}

/**
 * Runs pending migrations and returns the names of those it ran. On MySQL several instances (or
 * `npm run migrate` beside starting instances), also on different nodes of a Galera cluster, may
 * run at once: the migration lock row makes them take turns, and the later ones find nothing
 * left to do. Nothing else runs at start: counts after rows changed by plain SQL are
 * `npm run reconcile`'s.
 */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  if (!isMysql(dataSource)) return sqliteMigrations(dataSource);
  const holder = randomUUID();
  await takeMigrationLock(dataSource, holder);
  const renewal = setInterval(
    () => {
      dataSource.query(RENEW_MIGRATION_LOCK, [holder]).catch(() => undefined);
    },
    (MIGRATION_LOCK_STALE_S * 1000) / 5,
  );
  try {
    return names(await dataSource.runMigrations({ transaction: 'each' }));
  } finally {
    clearInterval(renewal);
    // A release that fails (the database away) must not hide the migration's own outcome: the
    // row goes stale and the next migrator takes it over.
    await dataSource.query(RELEASE_MIGRATION_LOCK, [holder]).catch(() => undefined);
  }
}

/**
 * Waits for the migration lock row to be this holder's: inserted by this instance, after the one
 * before has deleted it (or left it stale). A duplicate row, or a certification conflict with
 * another node's insert (Galera), means another holds it: try again shortly.
 */
async function takeMigrationLock(dataSource: DataSource, holder: string): Promise<void> {
  await dataSource.query(CREATE_MIGRATION_LOCK);
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  for (;;) {
    try {
      await dataSource.query(TAKE_MIGRATION_LOCK, [holder]);
      return;
    } catch (error) {
      if (uniqueViolation(error) === undefined && !isLockConflict(error)) throw error;
    }
    if (Date.now() > deadline) throw new Error('Timed out waiting for another instance to finish migrating');
    await dataSource.query(TAKE_OVER_STALE_MIGRATION_LOCK).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
  }
}

/**
 * SQLite: migrations are not retried as the API's statements are (Sql's `retried`), so while they
 * run a statement waits longer for a lock another process holds (`npm run reconcile`, a second
 * `npm run migrate`) before SQLITE_BUSY; then the connection's usual short wait is back.
 */
async function sqliteMigrations(dataSource: DataSource): Promise<string[]> {
  const [usual] = await dataSource.query<{ timeout: number }[]>('PRAGMA busy_timeout');
  await dataSource.query(`PRAGMA busy_timeout = ${SQLITE_MIGRATION_BUSY_TIMEOUT_MS}`);
  try {
    return names(await dataSource.runMigrations({ transaction: 'each' }));
  } finally {
    await dataSource.query(`PRAGMA busy_timeout = ${Number(usual?.timeout ?? 0)}`);
  }
}

const SQLITE_MIGRATION_BUSY_TIMEOUT_MS = 30_000;

/** Throws PendingMigrationsError when the migrations table lacks any migration this code knows. */
export async function assertSchemaCurrent(dataSource: DataSource): Promise<void> {
  const pending = await new MigrationExecutor(dataSource).getPendingMigrations();
  if (pending.length > 0) throw new PendingMigrationsError(names(pending));
}

const names = (migrations: readonly { name: string }[]): string[] => migrations.map((m) => m.name);

/** `npm run migrate`: connects on a DataSource of its own, runs what is pending, disconnects. */
export async function migrateDatabase(database: DatabaseConfig): Promise<string[]> {
  const dataSource = createDataSource(database);
  await dataSource.initialize();
  try {
    return await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
