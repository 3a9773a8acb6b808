import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, type DataSourceOptions, type Logger } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { Creature } from '../creatures/creature.entity';
import { Trainer } from '../trainers/trainer.entity';
import { migrations } from './migrations/index';

const entities = [Trainer, Creature];

export interface DataSourceExtras {
  /** Called with every SQL statement sent (tests and the benchmark count them). */
  readonly onQuery?: (sql: string) => void;
  /** Where slow statements are reported (without their parameters). */
  readonly warn?: (details: object, message: string) => void;
}

/** Statements of the API taking longer than this are cut off (Sql passes it to mysql2 with each one). */
export const QUERY_TIMEOUT_MS = 5000;

function appLogger({ onQuery, warn }: DataSourceExtras): Logger {
  const ignore = () => undefined;
  return {
    logQuery: onQuery ? (sql) => onQuery(sql) : ignore,
    logQueryError: ignore,
    logQuerySlow: warn ? (time, sql) => warn({ timeMs: time, sql }, 'slow SQL statement') : ignore,
    logSchemaBuild: ignore,
    logMigration: ignore,
    // Migrations report what they could not do silently (e.g. names that became one) as warnings.
    log: warn ? (level, message) => (level === 'warn' ? warn({}, String(message)) : undefined) : ignore,
  };
}

function dataSourceOptions(db: DatabaseConfig, extras: DataSourceExtras = {}): DataSourceOptions {
  const common = {
    entities,
    migrations,
    migrationsTableName: 'migrations',
    synchronize: false,
    logger: appLogger(extras),
  } as const;
  if (db.type === 'sqlite') {
    if (db.path !== ':memory:') createPrivately(db.path);
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
    charset: MYSQL_CONNECTION.charset,
    timezone: MYSQL_CONNECTION.timezone,
    // BIGINT values (ids, counts) as numbers, and as decimal strings only beyond 2^53 - 1, where a
    // number would be rounded (TypeORM's default is strings always; sqlInt takes either).
    supportBigNumbers: MYSQL_CONNECTION.supportBigNumbers,
    bigNumberStrings: MYSQL_CONNECTION.bigNumberStrings,
    // Bounded waits, so that requests fail with SERVICE_UNAVAILABLE rather than hang when MySQL
    // is away: connecting, each statement (mysql2 drops the connection when it runs out), and
    // the queue for a free connection.
    connectTimeout: MYSQL_CONNECTION.connectTimeout,
    // No stack captured for every statement (a measurable share of CPU on hot reads); our
    // errors never show driver stacks anyway.
    trace: MYSQL_CONNECTION.trace,
    // Not TypeORM's query timeout: it is also its slow-statement threshold. Sql bounds every
    // statement of the API itself and logs slow ones against SLOW_QUERY_MS, its own setting.
    enableQueryTimeout: false,
    poolSize: MYSQL_CONNECTION.connectionLimit,
    extra: MYSQL_POOL_EXTRA,
  };
}

/**
 * The pool settings beyond TypeORM's own options. Prepared statements kept per connection
 * (closed on the server when evicted): 10 x 64 stays far below MariaDB's
 * max_prepared_stmt_count (16,382 for the whole server).
 */
const MYSQL_POOL_EXTRA = {
  maxPreparedStatements: 64,
  enableKeepAlive: true,
  keepAliveInitialDelay: 10_000,
  maxIdle: 10,
  idleTimeout: 60_000,
  queueLimit: 500,
  // Sql.batch sends a transaction as one multi-statement query (one round trip, so the
  // trainer's row stays locked only while the server runs it). Every value still goes
  // through placeholders, escaped by mysql2, so no text a client sent can start a statement.
  multipleStatements: true,
} as const;

const MYSQL_CONNECTION = {
  charset: 'utf8mb4_bin',
  timezone: 'Z',
  supportBigNumbers: true,
  bigNumberStrings: false,
  connectTimeout: 3000,
  trace: false,
  connectionLimit: 10,
} as const;

/** mysql2 pool options equal to the primary's (TypeORM's), for the read replicas' own pools (replicas.ts). */
export const replicaPoolOptions = (): Record<string, unknown> => ({ ...MYSQL_CONNECTION, ...MYSQL_POOL_EXTRA });

/**
 * The SQLite file is created readable by its owner only (SQLite gives its -wal and -shm files the
 * same mode), in a folder only the owner can enter when this creates it.
 */
function createPrivately(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * A DataSource that tells TypeORM's MySQL driver when the server is MariaDB. A `mysql://` URL
 * may point at either; TypeORM's MariaDB mode (its `mariadb` type, same driver) knows that MariaDB
 * reports column defaults quoted and refuses NULL after a generated column (trainer.rest_json),
 * which its schema comparison and migration generation otherwise get wrong. Switched once
 * connected, when the server's version says MariaDB; the capabilities TypeORM derives from the
 * type (RETURNING, CTEs) are then derived again.
 */
class RegistryDataSource extends DataSource {
  /**
   * Ids are BIGINT in the entities (MySQL/MariaDB). SQLite's 64-bit row id is a column declared
   * exactly INTEGER PRIMARY KEY (`bigint PRIMARY KEY` would be a column of its own, and refuses
   * AUTOINCREMENT), so there the generated ids and the columns referring to them are INTEGER, as
   * the migrations made them: the same values, and the schema TypeORM compares with the tables.
   */
  protected override async buildMetadatas(): Promise<void> {
    await super.buildMetadatas();
    if (this.options.type !== 'better-sqlite3') return;
    for (const metadata of this.entityMetadatas) {
      for (const column of metadata.columns) {
        const rowId = (column.isPrimary && column.isGenerated) || column.referencedColumn?.isGenerated === true;
        if (column.type === 'bigint' && rowId) column.type = 'integer';
      }
    }
  }

  override async initialize(): Promise<this> {
    await super.initialize();
    const driver = this.driver as unknown as { options: { type: string }; afterConnect(): Promise<void> };
    if (driver.options.type !== 'mysql') return this;
    // TypeORM keeps only the version's number: MariaDB says its name after it.
    const [{ version }] = await this.query<{ version: string }[]>('SELECT VERSION() AS version');
    if (version.includes('MariaDB')) {
      driver.options.type = 'mariadb';
      await driver.afterConnect();
    }
    return this;
  }
}

export function createDataSource(db: DatabaseConfig, extras: DataSourceExtras = {}): DataSource {
  return new RegistryDataSource(dataSourceOptions(db, extras));
}

export function isMysql(dataSource: DataSource): boolean {
  return dataSource.options.type === 'mysql' || dataSource.options.type === 'mariadb';
}
