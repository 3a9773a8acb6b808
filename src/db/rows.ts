import type { DataSource } from 'typeorm';
import { isMysql, QUERY_TIMEOUT_MS } from './data-source';

/*
 * Helpers for the hand-written reads on hot paths (trainer lookups, pages): the same SQL runs on
 * MySQL/MariaDB and SQLite, so it uses unquoted identifiers and `?` placeholders only.
 */

/** `?, ?, ?` for an IN list of n values. */
export const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/**
 * A DATETIME column as a Date. MySQL (timezone Z) hands out Dates; SQLite keeps the UTC text
 * TypeORM wrote (`2026-11-22 05:48:48.704`), read back as UTC the way TypeORM reads it.
 */
export function sqlDate(value: Date | string): Date {
  if (value instanceof Date) return value;
  return new Date(value.includes('T') ? value : `${value.replace(' ', 'T')}Z`);
}

/** COUNT(*) and integer columns: MySQL may answer them as strings (BIGINT), SQLite as numbers. */
export const sqlInt = (value: number | string | bigint): number => Number(value);

type RawCallback = (error: Error | null, rows: unknown) => void;
interface RawPool {
  query(options: { sql: string; values: unknown[]; timeout: number }, callback: RawCallback): void;
  execute(options: { sql: string; values: unknown[]; timeout: number }, callback: RawCallback): void;
}

/**
 * Rows of one SELECT. On MySQL it goes straight to the driver's pool: TypeORM's query runner
 * (a runner, a connection checkout, a promise wrapper per statement) cost more CPU than the
 * statement's own round trip (node --cpu-prof). It is still reported to the DataSource's logger,
 * so statement counts and slow-statement warnings stay the same, and bounded by the same timeout.
 * `prepared` statements (fixed-shape lookups; not LIMIT, which MySQL 8 refuses as a bound
 * double) are parsed once per connection, which saves the database's CPU on every call after.
 */
export function selectRows<T>(dataSource: DataSource, sql: string, params: unknown[], { prepared = false } = {}): Promise<T[]> {
  if (!isMysql(dataSource)) return dataSource.query<T[]>(sql, params);
  const pool = (dataSource.driver as unknown as { pool?: RawPool }).pool;
  if (!pool) return dataSource.query<T[]>(sql, params);
  const logger = dataSource.logger;
  logger.logQuery(sql);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const done: RawCallback = (error, rows) => {
      const elapsed = performance.now() - started;
      if (elapsed > QUERY_TIMEOUT_MS) logger.logQuerySlow(Math.round(elapsed), sql);
      if (error) reject(error);
      else resolve(rows as T[]);
    };
    const options = { sql, values: params, timeout: QUERY_TIMEOUT_MS };
    if (prepared) pool.execute(options, done);
    else pool.query(options, done);
  });
}
