import type { FastifyBaseLogger } from 'fastify';
import type { DataSource } from 'typeorm';
import { runMigrations } from './migrate';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 5000;

/**
 * Connects and migrates, retrying with backoff while the database is away (0.5 s, 1 s, 2 s...
 * up to 5 s), so that a service started before its database becomes ready on its own.
 */
export class DatabaseConnector {
  private stopped = false;
  private wake: (() => void) | undefined;
  private done: Promise<void> | undefined;
  ready = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** One attempt: connected and migrated, or an error (and nothing left open). */
  async connectOnce(): Promise<void> {
    try {
      if (!this.dataSource.isInitialized) await this.dataSource.initialize();
      await runMigrations(this.dataSource);
      this.ready = true;
    } catch (error) {
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
          this.log.warn({ err: error, retryInMs: delay }, 'database unavailable; retrying');
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
