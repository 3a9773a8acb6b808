import { closeSync, mkdirSync, openSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { dirname } from 'node:path';
import type { PoolConnection } from 'mysql2';
import { DataSource, type DataSourceOptions, type Logger } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { Creature } from '../creatures/creature.entity';
import { Trainer } from '../trainers/trainer.entity';
import { migrations } from './migrations/index';
import { sqliteAddonProblem } from './sqlite-addon';
import type { Metrics } from '../ops/metrics';
import { CAUSAL_READS } from './connection.queries';

const entities = [Trainer, Creature];

export interface DataSourceExtras {
  /** The app's metrics: every SQL statement sent (db_statements_total) and, on MySQL, the pool's events. */
  readonly metrics?: Pick<Metrics, 'dbStatements' | 'dbPoolEvents'>;
  /** Called with every SQL statement sent (tests count them). */
  readonly onQuery?: (sql: string) => void;
  /** Where slow statements are reported (without their parameters). */
  readonly warn?: (details: object, message: string) => void;
}

/** SQLite: how long a statement waits for another connection's lock before SQLITE_BUSY (see dataSourceOptions). */
const SQLITE_BUSY_TIMEOUT_MS = 250;

/** Statements of the API taking longer than this are cut off (Sql passes it to mysql2 with each one). */
export const QUERY_TIMEOUT_MS = 5000;

function appLogger({ metrics, onQuery, warn }: DataSourceExtras): Logger {
  const ignore = () => undefined;
  const statements = metrics?.dbStatements;
  return {
    logQuery: (sql) => {
      statements?.inc();
      onQuery?.(sql);
    },
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
    const problem = sqliteAddonProblem();
    if (problem) throw new Error(problem);
    if (db.path !== ':memory:') createPrivately(db.path);
    return {
      ...common,
      type: 'better-sqlite3',
      database: db.path,
      // WAL lets readers run while a write is in progress; foreign keys are on by TypeORM's default.
      enableWAL: db.path !== ':memory:',
      // How long a statement waits, inside SQLite, for a lock another connection holds (another
      // process on the same file: `npm run reconcile`, `npm run migrate`), before SQLITE_BUSY.
      // better-sqlite3 waits on the event loop's thread, so the wait is short; Sql then tries
      // again after a backoff, off the event loop (see Sql's `retried`).
      timeout: SQLITE_BUSY_TIMEOUT_MS,
    };
  }
  return {
    ...common,
    // TypeORM's MariaDB mode (same driver) changes how it reads and writes schemas: MariaDB reports
    // literal column defaults quoted and a missing default as 'NULL', and refuses NULL / NOT NULL
    // after a generated column, which TypeORM otherwise writes; it also lets TypeORM use
    // RETURNING and CTEs. Without it, `npm run migration:generate` and TypeORM's own DDL
    // (queryRunner.addColumn of a generated column) go wrong on MariaDB. The service's SQL is its
    // own either way. Taken from the URL (`mariadb://`), so the type is fixed when the DataSource
    // is built, as TypeORM needs it, even while the server is away.
    type: db.mariadb ? 'mariadb' : 'mysql',
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
 * How many statements may wait for a free connection of a pool, and how many requests for
 * admission (http/admission.ts): beyond, SERVICE_UNAVAILABLE rather than a wait without bound.
 */
export const WAITING_LIMIT = 500;

/** Connections of each MySQL pool, the primary's and each replica's. */
export const POOL_CONNECTIONS = 10;

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
  queueLimit: WAITING_LIMIT,
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
  connectionLimit: POOL_CONNECTIONS,
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

/** mysql2's public pool events (its Pool is an EventEmitter), counted for GET /metrics (db_pool_events_total). */
const POOL_EVENTS = ['connection', 'acquire', 'release', 'enqueue'] as const;

/**
 * A DataSource that, once connected (initialize is TypeORM's public entry point; nothing else of
 * it is overridden):
 *
 * - On SQLite, declares the row ids as the migrations made them. Ids are BIGINT in the entities
 *   (MySQL/MariaDB). SQLite's 64-bit row id is a column declared exactly INTEGER PRIMARY KEY
 *   (`bigint PRIMARY KEY` would be a column of its own, and refuses AUTOINCREMENT), so there the
 *   generated ids and the columns referring to them are INTEGER: the same values. Nothing of the
 *   service reads through TypeORM's entities (its SQL is its own); the column types matter to
 *   TypeORM's schema comparison (`createSchemaBuilder().log()`, the schema test, and
 *   `npm run migration:generate`), which would otherwise want every id column changed. Set on
 *   the public ColumnMetadata of the built entity metadata, before anything reads them.
 * - On MySQL, counts mysql2's public pool events in the metrics it was given: the pool's own
 *   counts of open, idle and waiting connections are private fields, and are not read.
 * - On MySQL, asks for causal reads on each connection before its first use (see causalReads).
 */
class RegistryDataSource extends DataSource {
  constructor(
    options: DataSourceOptions,
    private readonly poolEvents?: Metrics['dbPoolEvents'],
  ) {
    super(options);
  }

  override async initialize(): Promise<this> {
    await super.initialize();
    if (this.options.type === 'better-sqlite3') {
      for (const metadata of this.entityMetadatas) {
        for (const column of metadata.columns) {
          const rowId = (column.isPrimary && column.isGenerated) || column.referencedColumn?.isGenerated === true;
          if (column.type === 'bigint' && rowId) column.type = 'integer';
        }
      }
    }
    const found: unknown = 'pool' in this.driver ? this.driver.pool : undefined;
    const pool = found instanceof EventEmitter ? (found as EventEmitter) : undefined;
    if (pool) causalReads(pool);
    const counter = this.poolEvents;
    if (counter && pool) {
      // Each event shows from the first connection on, at 0 until it comes. A DataSource connected
      // again (DatabaseConnector) has a new pool: the counts go on.
      for (const event of POOL_EVENTS) {
        counter.inc({ event }, 0);
        pool.on(event, () => counter.inc({ event }));
      }
    }
    return this;
  }
}

/**
 * Every connection of the pool reads causally on a Galera node (wsrep_sync_wait = 1): a read, or
 * the start of a transaction, first waits until this node has applied every write the cluster had
 * committed when it was sent. A client whose write went through one node and whose next request
 * lands on another instance, on another node, reads that write (and a logout, a password change
 * or a deletion made through any node is seen by the session check at once). Without Galera the
 * variable does nothing (MariaDB: wsrep off); MySQL has no such variable and refuses it, which is
 * ignored. Sent on a connection's first acquisition, queued ahead of the statement it was taken
 * for: TypeORM opens the pool's first connection before the pool can be listened to, so its
 * 'connection' event would be missed.
 */
function causalReads(pool: EventEmitter): void {
  const asked = new WeakSet<object>();
  pool.on('acquire', (connection: PoolConnection) => {
    if (asked.has(connection)) return;
    asked.add(connection);
    connection.query(CAUSAL_READS, (error) => {
      // Anything but MySQL's unknown variable: the connection is not used without the setting.
      if (error && error.code !== 'ER_UNKNOWN_SYSTEM_VARIABLE') connection.destroy();
    });
  });
}

export function createDataSource(db: DatabaseConfig, extras: DataSourceExtras = {}): DataSource {
  return new RegistryDataSource(dataSourceOptions(db, extras), extras.metrics?.dbPoolEvents);
}

export function isMysql(dataSource: DataSource): boolean {
  return dataSource.options.type === 'mysql' || dataSource.options.type === 'mariadb';
}
