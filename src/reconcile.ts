import { runDatabaseCommand } from './cli';
import { reconcileDatabase } from './trainers/reconcile';

/**
 * `npm run reconcile`: makes every count the service maintains exact again after rows were
 * changed by plain SQL (see trainers/reconcile.ts). Safe while instances serve; takes the same
 * DATABASE_URL.
 */
runDatabaseCommand('reconcile', async (database, log) => {
  const started = Date.now();
  const done = await reconcileDatabase(database, log);
  log.info({ ...done, seconds: (Date.now() - started) / 1000 }, 'reconcile: every maintained count is exact');
});
