import 'reflect-metadata';
import pino from 'pino';
import { ConfigError, loadDatabaseConfig } from './config';
import { migrateDatabase } from './db/migrate';

/**
 * `npm run migrate`: runs the pending migrations and exits, for a deploy step before the new
 * instances start (with MIGRATE_ON_START=false they then only check that nothing is pending).
 * Takes the same DATABASE_URL; on MySQL it waits for the named lock that instances migrating at
 * start take too, so it is safe beside them. A process of its own, like main.ts.
 */
async function main(): Promise<void> {
  const log = pino({ level: 'info' });
  let database;
  try {
    database = loadDatabaseConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const started = Date.now();
  const ran = await migrateDatabase(database);
  log.info(
    { ran, seconds: (Date.now() - started) / 1000 },
    ran.length === 0 ? 'migrate: the schema is current; nothing to run' : `migrate: ran ${ran.length} migration(s)`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`migrate failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
