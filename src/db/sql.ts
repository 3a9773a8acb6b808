import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2';
import type { DataSource, QueryResult } from 'typeorm';
import { MysqlDriver } from 'typeorm/driver/mysql/MysqlDriver';
import { AppError } from '../errors';
import { unavailableAsAppError } from './errors';

/*
 * How the modules' query files (trainer.queries.ts, creature.queries.ts) talk to the database:
 * hand-written SQL with `?` placeholders and unquoted identifiers, the same text on MySQL/MariaDB
 * and SQLite. TypeORM owns the connections and the migrations; statements go through its
 * DataSource, except on MySQL, where they go straight to the driver's pool (TypeORM's public
 * `MysqlDriver.pool`, a mysql2 pool): a query runner per statement cost more CPU than the
 * statement's own round trip (node --cpu-prof). Every statement is still reported to the
 * DataSource's logger, so statement counts and slow-statement warnings cover both paths.
 * A database that is away fails a statement with SERVICE_UNAVAILABLE (unavailableAsAppError),
 * here, where every read and write passes: resolvers and routes need no wrapper of their own.
 */

/** What a write changed. */
export interface WriteResult {
  readonly affected: number;
  /** The id the database gave a new row (INSERT). */
  readonly insertId: number;
}

/** `?, ?, ?` for an IN list of n values. */
export const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/**
 * A DATETIME column as a Date. MySQL (timezone Z) hands out Dates; SQLite keeps UTC text
 * (`2026-11-22 05:48:48.704`, as TypeORM writes it), read back as UTC.
 */
export function sqlDate(value: Date | string): Date {
  if (value instanceof Date) return value;
  return new Date(value.includes('T') ? value : `${value.replace(' ', 'T')}Z`);
}

/** COUNT(*) and integer columns: MySQL may answer them as strings (BIGINT), SQLite as numbers. */
export const sqlInt = (value: number | string | bigint): number => Number(value);

/** What runs statements: the Sql gateway itself, or one transaction (see Sql.transaction). */
export interface Statements {
  rows<T>(sql: string, params: readonly unknown[]): Promise<T[]>;
  write(sql: string, params: readonly unknown[]): Promise<WriteResult>;
}

export interface SqlLimits {
  /** Statements taking longer are cut off (MySQL: mysql2 drops the connection). */
  readonly timeoutMs: number;
  /** Statements taking at least this long are reported to the logger as slow (SLOW_QUERY_MS). */
  readonly slowMs: number;
}

export class Sql implements Statements {
  /**
   * SQLite has one connection, so a transaction on it would take in any statement issued while
   * it is open (and lose it on rollback). While one is open (`sqliteTransaction`), other
   * statements wait for it; it starts once the statements already under way have finished.
   */
  private sqliteTransaction: Promise<void> | undefined;
  private sqliteUnderWay = 0;
  private sqliteQuiet: (() => void) | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly limits: SqlLimits,
  ) {}

  get isMysql(): boolean {
    return this.dataSource.options.type === 'mysql' || this.dataSource.options.type === 'mariadb';
  }

  /** A DATETIME value as this database stores it: a Date for mysql2 (timezone Z), UTC text for SQLite. */
  date(value: Date): Date | string {
    return this.isMysql ? value : value.toISOString().replace('T', ' ').replace('Z', '');
  }

  /**
   * The rows of one SELECT. `prepared` (fixed-shape lookups; not LIMIT, which MySQL 8 refuses
   * as a bound double) parses the statement once per MySQL connection, which saves the
   * database's CPU on every later call.
   */
  rows<T>(sql: string, params: readonly unknown[], { prepared = false } = {}): Promise<T[]> {
    const pool = this.pool();
    if (!pool) return this.onSqlite(() => this.timed(sql, () => this.dataSource.query<T[]>(sql, [...params])));
    return this.onPool<T[]>(pool, sql, params, prepared);
  }

  /** An INSERT, UPDATE or DELETE. */
  async write(sql: string, params: readonly unknown[]): Promise<WriteResult> {
    const pool = this.pool();
    if (pool) {
      const header = await this.onPool<ResultSetHeader>(pool, sql, params, false);
      return { affected: header.affectedRows, insertId: header.insertId };
    }
    return this.onSqlite(() => this.sqliteWrite(sql, params));
  }

  /**
   * Runs `body` in one transaction: committed when it resolves, rolled back when it throws (the
   * error is passed on). MySQL: on one pooled connection. SQLite: BEGIN IMMEDIATE, with every
   * other statement of this process waiting until it ends.
   */
  async transaction<T>(body: (tx: Statements) => Promise<T>): Promise<T> {
    const pool = this.pool();
    return pool ? this.mysqlTransaction(pool, body) : this.sqliteTransactionOf(body);
  }

  private async sqliteWrite(sql: string, params: readonly unknown[]): Promise<WriteResult> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const result = (await this.timed(sql, () => runner.query(sql, [...params], true))) as QueryResult<number | bigint>;
      return { affected: result.affected ?? 0, insertId: Number(result.raw) };
    } finally {
      await runner.release();
    }
  }

  /** A statement outside any transaction, on SQLite: after the open transaction, if any. */
  private async onSqlite<T>(statement: () => Promise<T>): Promise<T> {
    while (this.sqliteTransaction) await this.sqliteTransaction;
    this.sqliteUnderWay += 1;
    try {
      return await statement();
    } finally {
      this.sqliteUnderWay -= 1;
      if (this.sqliteUnderWay === 0) this.sqliteQuiet?.();
    }
  }

  private async sqliteTransactionOf<T>(body: (tx: Statements) => Promise<T>): Promise<T> {
    while (this.sqliteTransaction) await this.sqliteTransaction;
    let end!: () => void;
    this.sqliteTransaction = new Promise<void>((resolve) => (end = resolve));
    try {
      if (this.sqliteUnderWay > 0) await new Promise<void>((resolve) => (this.sqliteQuiet = resolve));
      this.sqliteQuiet = undefined;
      const tx: Statements = {
        rows: <R>(sql: string, params: readonly unknown[]) => this.timed(sql, () => this.dataSource.query<R[]>(sql, [...params])),
        write: (sql, params) => this.sqliteWrite(sql, params),
      };
      await this.timed('BEGIN IMMEDIATE', () => this.dataSource.query('BEGIN IMMEDIATE'));
      let result: T;
      try {
        result = await body(tx);
      } catch (error) {
        await this.dataSource.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      await this.timed('COMMIT', () => this.dataSource.query('COMMIT'));
      return result;
    } finally {
      this.sqliteTransaction = undefined;
      end();
    }
  }

  private async mysqlTransaction<T>(pool: Pool, body: (tx: Statements) => Promise<T>): Promise<T> {
    const connection = await new Promise<PoolConnection>((resolve, reject) =>
      pool.getConnection((error, got) => (error ? reject(unavailableAsAppError(error)) : resolve(got))),
    );
    let healthy = true;
    const run = async <R>(sql: string, params: readonly unknown[]): Promise<R> => {
      try {
        return await this.onConnection<R>(connection, sql, params);
      } catch (error) {
        // A cut or timed-out connection does not go back to the pool.
        if (error instanceof AppError ? error.code === 'SERVICE_UNAVAILABLE' : (error as { fatal?: boolean }).fatal) healthy = false;
        throw error;
      }
    };
    const tx: Statements = {
      rows: <R>(sql: string, params: readonly unknown[]) => run<R[]>(sql, params),
      write: async (sql, params) => {
        const header = await run<ResultSetHeader>(sql, params);
        return { affected: header.affectedRows, insertId: header.insertId };
      },
    };
    try {
      await run('START TRANSACTION', []);
      let result: T;
      try {
        result = await body(tx);
      } catch (error) {
        if (healthy) await run('ROLLBACK', []).catch(() => undefined);
        throw error;
      }
      await run('COMMIT', []);
      return result;
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  /** Reports the statement as slow when it took at least SLOW_QUERY_MS (TypeORM's own report is off). */
  private async timed<T>(sql: string, statement: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await statement();
    } catch (error) {
      throw unavailableAsAppError(error);
    } finally {
      this.reportIfSlow(sql, started);
    }
  }

  private reportIfSlow(sql: string, started: number): void {
    const elapsed = performance.now() - started;
    if (elapsed >= this.limits.slowMs) this.dataSource.logger.logQuerySlow(Math.round(elapsed), sql);
  }

  private pool(): Pool | undefined {
    const driver = this.dataSource.driver;
    return driver instanceof MysqlDriver ? (driver.pool as Pool | undefined) : undefined;
  }

  private onConnection<T>(connection: PoolConnection, sql: string, params: readonly unknown[]): Promise<T> {
    return this.onPool<T>(connection, sql, params, false);
  }

  private onPool<T>(pool: Pool | PoolConnection, sql: string, params: readonly unknown[], prepared: boolean): Promise<T> {
    const logger = this.dataSource.logger;
    logger.logQuery(sql);
    const started = performance.now();
    return new Promise<T>((resolve, reject) => {
      const done = (error: Error | null, result: unknown) => {
        this.reportIfSlow(sql, started);
        if (error) reject(unavailableAsAppError(error));
        else resolve(result as T);
      };
      const options = { sql, values: [...params] as unknown[], timeout: this.limits.timeoutMs };
      if (prepared) pool.execute(options, done);
      else pool.query(options, done);
    });
  }
}
