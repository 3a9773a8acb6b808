import { runDatabaseCommand } from './cli';
import { migrateDatabase } from './db/migrate';

/**
 * `npm run migrate`: runs the pending migrations and exits, for a deploy step before the new
 * instances start (with MIGRATE_ON_START=false they then only check that nothing is pending).
 * Takes the same DATABASE_URL; on MySQL it waits for the named lock that instances migrating at
 * start take too, so it is safe beside them.
 */
runDatabaseCommand('migrate', async (database, log) => {
  const started = Date.now();
  const ran = await migrateDatabase(database);
  log.info(
    { ran, seconds: (Date.now() - started) / 1000 },
    ran.length === 0 ? 'migrate: the schema is current; nothing to run' : `migrate: ran ${ran.length} migration(s)`,
  );
});
