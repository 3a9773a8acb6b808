import type { BaseLogger } from 'pino';
import type { DataSource } from 'typeorm';
import { assertSchemaCurrent, PendingMigrationsError, runMigrations } from './migrate';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 5000;

/**
 * Connects and migrates (or, with MIGRATE_ON_START=false, checks that nothing is pending),
 * retrying with backoff while the database is away or its schema is behind (0.5 s, 1 s, 2 s...
 * up to 5 s), so that a service started before its database, or before the deploy's
 * `npm run migrate`, becomes ready on its own and never serves on an old schema.
 */
export class DatabaseConnector {
  private stopped = false;
  private wake: (() => void) | undefined;
  private done: Promise<void> | undefined;
  ready = false;
  /** Connected, but pending migrations keep it from serving (MIGRATE_ON_START=false). */
  schemaBehind = false;

  constructor(
    private readonly dataSource: DataSource,
    /** The app's logger (pino's, as Fastify's is): the data layer knows no transport. */
    private readonly log: Pick<BaseLogger, 'info' | 'warn' | 'error'>,
    /** Run pending migrations (MIGRATE_ON_START), or only refuse to serve while any are pending. */
    private readonly migrate = true,
  ) {}

  /** One attempt: connected and migrated, or an error (and nothing left open). */
  async connectOnce(): Promise<void> {
    try {
      if (!this.dataSource.isInitialized) await this.dataSource.initialize();
      if (this.migrate) await runMigrations(this.dataSource);
      else await assertSchemaCurrent(this.dataSource);
      this.ready = true;
      this.schemaBehind = false;
    } catch (error) {
      this.schemaBehind = error instanceof PendingMigrationsError;
      if (this.dataSource.isInitialized) await this.dataSource.destroy().catch(() => undefined);
      throw error;
    }
  }

  /** Keeps trying in the background until connected or stopped. */
  start(): void {
    this.done ??= (async () => {
      let delay = FIRST_DELAY_MS;
      while (!this.stopped && !this.ready) {
        try {
          await this.connectOnce();
          this.log.info('database connected');
        } catch (error) {
          if (error instanceof PendingMigrationsError) {
            this.log.error({ pending: error.pending, retryInMs: delay }, `${error.message}; not serving until then`);
          } else this.log.warn({ err: error, retryInMs: delay }, 'database unavailable; retrying');
          await new Promise<void>((resolve) => {
            this.wake = resolve;
            setTimeout(resolve, delay).unref();
          });
          delay = Math.min(delay * 2, MAX_DELAY_MS);
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.done;
  }
}
