import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, type DataSourceOptions, type Logger, type LoggerOptions } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { Creature } from '../creatures/creature.entity';
import { Trainer } from '../trainers/trainer.entity';
import { migrations } from './migrations/index';

export const entities = [Trainer, Creature];

export interface DataSourceExtras {
  readonly logging?: LoggerOptions;
  /** Called with every SQL statement sent (tests and the benchmark count them). */
  readonly onQuery?: (sql: string) => void;
}

function queryListener(onQuery: (sql: string) => void): Logger {
  const ignore = () => undefined;
  return { logQuery: (sql) => onQuery(sql), logQueryError: ignore, logQuerySlow: ignore, logSchemaBuild: ignore, logMigration: ignore, log: ignore };
}

export function dataSourceOptions(db: DatabaseConfig, extras: DataSourceExtras = {}): DataSourceOptions {
  const common = {
    entities,
    migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: extras.onQuery ? (['query'] as LoggerOptions) : (extras.logging ?? false),
    ...(extras.onQuery ? { logger: queryListener(extras.onQuery) } : {}),
  } as const;
  if (db.type === 'sqlite') {
    if (db.path !== ':memory:') mkdirSync(dirname(db.path), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      database: db.path,
      // WAL lets readers run while a write is in progress; foreign keys are on by TypeORM's default.
      enableWAL: db.path !== ':memory:',
      // Wait for a lock instead of failing at once with SQLITE_BUSY.
      timeout: 5000,
    };
  }
  return {
    ...common,
    type: 'mysql',
    url: db.url,
    charset: 'utf8mb4_bin',
    timezone: 'Z',
    // Bounded waits: fail fast with SERVICE_UNAVAILABLE rather than hang when MySQL is away.
    connectTimeout: 5000,
    poolSize: 10,
    extra: { enableKeepAlive: true, maxIdle: 10, idleTimeout: 60_000 },
  };
}

export function createDataSource(db: DatabaseConfig, extras: DataSourceExtras = {}): DataSource {
  return new DataSource(dataSourceOptions(db, extras));
}

export function isMysql(dataSource: DataSource): boolean {
  return dataSource.options.type === 'mysql' || dataSource.options.type === 'mariadb';
}
