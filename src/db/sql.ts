import type { Pool, ResultSetHeader } from 'mysql2';
import type { DataSource, QueryResult } from 'typeorm';
import { MysqlDriver } from 'typeorm/driver/mysql/MysqlDriver';
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

export interface SqlLimits {
  /** Statements taking longer are cut off (MySQL: mysql2 drops the connection). */
  readonly timeoutMs: number;
  /** Statements taking at least this long are reported to the logger as slow (SLOW_QUERY_MS). */
  readonly slowMs: number;
}

export class Sql {
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
    if (!pool) return this.timed(sql, () => this.dataSource.query<T[]>(sql, [...params]));
    return this.onPool<T[]>(pool, sql, params, prepared);
  }

  /** An INSERT, UPDATE or DELETE. */
  async write(sql: string, params: readonly unknown[]): Promise<WriteResult> {
    const pool = this.pool();
    if (pool) {
      const header = await this.onPool<ResultSetHeader>(pool, sql, params, false);
      return { affected: header.affectedRows, insertId: header.insertId };
    }
    const runner = this.dataSource.createQueryRunner();
    try {
      const result = (await this.timed(sql, () => runner.query(sql, [...params], true))) as QueryResult<number | bigint>;
      return { affected: result.affected ?? 0, insertId: Number(result.raw) };
    } finally {
      await runner.release();
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

  private onPool<T>(pool: Pool, sql: string, params: readonly unknown[], prepared: boolean): Promise<T> {
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
