import 'reflect-metadata';
import pino from 'pino';
import { ConfigError, loadDatabaseConfig } from './config';
import { reconcileDatabase } from './trainers/reconcile';

/**
 * `npm run reconcile`: makes every count the service maintains exact again after rows were
 * changed by plain SQL (see trainers/reconcile.ts). Safe while instances serve; takes the same
 * DATABASE_URL. A process of its own, like main.ts: it reads the environment and exits.
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
  const done = await reconcileDatabase(database, log);
  log.info({ ...done, seconds: (Date.now() - started) / 1000 }, 'reconcile: every maintained count is exact');
}

main().catch((error: unknown) => {
  process.stderr.write(`reconcile failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
