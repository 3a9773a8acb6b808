import 'reflect-metadata';
import pino, { type Logger } from 'pino';
import { ConfigError, loadDatabaseConfig, type DatabaseConfig } from './config';

/** The settings `load` reads from the environment; a bad one is one line on stderr and exit code 1. */
export function settingsOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * A one-shot command on the database of DATABASE_URL (`npm run migrate`, `npm run reconcile`): a
 * process of its own, like main.ts. A bad setting is one line on stderr and exit code 1; so is a
 * failure of the work itself, prefixed with the command's name.
 */
export function runDatabaseCommand(name: string, work: (database: DatabaseConfig, log: Logger) => Promise<void>): void {
  const log = pino({ level: 'info' });
  const database = settingsOrExit(() => loadDatabaseConfig(process.env));
  work(database, log).catch((error: unknown) => {
    process.stderr.write(`${name} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
