import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2';
import type { DataSource, QueryResult } from 'typeorm';
import { MysqlDriver } from 'typeorm/driver/mysql/MysqlDriver';
import { isLockConflict, lockConflictAsAppError, unavailableAsAppError } from './errors';
import type { Tracing } from '../telemetry/spans';
import type { Replicas } from './replicas';
import {
  BEGIN_IMMEDIATE,
  COMMIT,
  IS_GALERA,
  mysqlTransaction,
  ROLLBACK,
  SQLITE_FOREIGN_KEYS_OFF,
  SQLITE_FOREIGN_KEYS_ON,
} from './connection.queries';
import { isMysql, POOL_CONNECTIONS } from './data-source';
import { Metrics } from '../ops/metrics';

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
 * So is a lock conflict handled here, for every write and transaction (see `retried`).
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
 * "`column` is one of `ids`" as a condition: each run of consecutive ids as one range
 * (`column BETWEEN ? AND ?`), the ids next to no other in one IN list. Exact: a range holds only
 * ids of the list. The trainers of a page mostly have consecutive ids, and MariaDB reads one range
 * of an index with less CPU than the same rows found by as many lookups of one value each.
 */
export function idsCondition(column: string, ids: readonly number[]): { sql: string; params: number[] } {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const conditions: string[] = [];
  const params: number[] = [];
  const single: number[] = [];
  for (let start = 0; start < sorted.length;) {
    let end = start;
    while (end + 1 < sorted.length && Number.isSafeInteger(sorted[end]) && sorted[end + 1] === sorted[end] + 1) end += 1;
    if (end > start) {
      conditions.push(`${column} BETWEEN ? AND ?`);
      params.push(sorted[start], sorted[end]);
    } else single.push(sorted[start]);
    start = end + 1;
  }
  if (single.length > 0) {
    conditions.push(`${column} IN (${placeholders(single.length)})`);
    params.push(...single);
  }
  return { sql: conditions.length === 1 ? conditions[0] : `(${conditions.join(' OR ')})`, params };
}

/**
 * A DATETIME column as a Date. MySQL (timezone Z) hands out Dates; SQLite keeps UTC text
 * (`2026-11-22 05:48:48.704`, as TypeORM writes it), read back as UTC.
 */
export function sqlDate(value: Date | string): Date {
  if (value instanceof Date) return value;
  return new Date(value.includes('T') ? value : `${value.replace(' ', 'T')}Z`);
}

/**
 * COUNT(*), ids and other integer columns as numbers: mysql2 answers BIGINT as a number, or as a
 * decimal string beyond 2^53 - 1 (see data-source.ts), SQLite as a number. Ids up to 2^53 - 1
 * come out exact; larger ones (only plain SQL can write them) are rounded.
 */
export const sqlInt = (value: number | string | bigint): number => Number(value);

/** One statement of a batch (see Sql.batch). */
export interface BatchStatement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** What one statement of a batch gave: its rows (SELECT, RETURNING), or what it changed. */
export interface BatchResult {
  readonly rows: readonly unknown[];
  readonly affected: number;
  readonly insertId: number;
}

export interface SqlLimits {
  /** Statements taking longer are cut off (MySQL: mysql2 drops the connection). */
  readonly timeoutMs: number;
  /** Statements taking at least this long are reported to the logger as slow (SLOW_QUERY_MS). */
  readonly slowMs: number;
  /** How a write or transaction that lost a lock conflict is tried again (LOCK_RETRY when left out). */
  readonly retry?: RetryPolicy;
}

/**
 * Tries of a write or transaction that loses lock conflicts: `attempts` in all, the n-th try again
 * after a wait drawn between half and all of min(capMs, baseMs * 2^(n-1)).
 */
export interface RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly capMs: number;
}

/**
 * Eight tries over 0.6 to 1.1 s of waits in all: a deadlock is over after one (the other side
 * has gone on), and the budget outlasts a transaction of `npm run reconcile` that holds SQLite.
 */
const LOCK_RETRY: RetryPolicy = { attempts: 8, baseMs: 10, capMs: 500 };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The statements sent to MySQL and not yet answered, against the connections of its pools (the
 * primary's and the replicas'): what the API's door (http/admission.ts) weighs before it lets a
 * request in, and the signal it waits for (`onSettled`). SQLite runs each statement in the
 * process, at once: it is never busy.
 */
export class StatementLoad {
  private running = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly connections: number) {}

  /** Whether every connection has a statement: one sent now would wait for a connection. */
  get busy(): boolean {
    return this.running >= this.connections;
  }

  /** Whether there are connections to count (MySQL): else (SQLite) it is never busy. */
  get bounded(): boolean {
    return Number.isFinite(this.connections);
  }

  /** Calls `listener` each time a statement has been answered (a connection may be free). */
  onSettled(listener: () => void): void {
    this.listeners.push(listener);
  }

  started(): void {
    this.running += 1;
  }

  settled(): void {
    this.running -= 1;
    for (const listener of this.listeners) listener();
  }
}

export class Sql {
  /**
   * SQLite has one connection, so a transaction on it would take in any statement issued while
   * it is open (and lose it on rollback). While one is open (`sqliteTransaction`), other
   * statements wait for it; it starts once the statements already under way have finished.
   */
  private sqliteTransaction: Promise<void> | undefined;
  private sqliteUnderWay = 0;
  private sqliteQuiet: (() => void) | undefined;

  /**
   * Whether the database is MySQL/MariaDB (else SQLite), as data-source.ts's isMysql says: the
   * query files ask this, for the few statements whose text differs between the two.
   */
  readonly isMysql: boolean;

  private readonly retry: RetryPolicy;

  /** Whether the MySQL server is a Galera node (see mysqlBatch), asked once it answers. */
  private galera: boolean | undefined;

  /** The statements under way on MySQL, against its connections. */
  readonly load: StatementLoad;

  /**
   * @param tracing with tracing on: a span per SQLite statement (MySQL's come from the mysql2
   *   instrumentation, telemetry/sdk.ts)
   */
  constructor(
    private readonly dataSource: DataSource,
    private readonly limits: SqlLimits,
    private readonly tracing?: Pick<Tracing, 'statement'>,
    /** DATABASE_REPLICA_URLS: where reads marked `mayLag` go while one is healthy. */
    private readonly replicas?: Replicas,
    /**
     * Where the lock conflicts met are counted (db_lock_conflicts_total): the app's metrics; a Sql
     * made on its own (`npm run reconcile`) counts in metrics of its own.
     */
    readonly metrics: Pick<Metrics, 'lockConflicts'> = new Metrics(),
  ) {
    this.isMysql = isMysql(dataSource);
    this.retry = limits.retry ?? LOCK_RETRY;
    this.load = new StatementLoad(this.isMysql ? POOL_CONNECTIONS * (1 + (replicas?.size ?? 0)) : Infinity);
  }

  /** A DATETIME value as this database stores it: a Date for mysql2 (timezone Z), UTC text for SQLite. */
  date(value: Date): Date | string {
    return this.isMysql ? value : value.toISOString().replace('T', ' ').replace('Z', '');
  }

  /**
   * The rows of one SELECT. `prepared` (fixed-shape lookups; not LIMIT, which MySQL 8 refuses
   * as a bound double) parses the statement once per MySQL connection, which saves the
   * database's CPU on every later call. `mayLag`: a read that may be answered a moment out of
   * date (other trainers' data, lists, counts, search), sent to a healthy read replica when there
   * is one; every other read is the primary's, so nobody misses their own writes. A replica that
   * fails the read is taken out of turn and the primary answers instead.
   */
  rows<T>(sql: string, params: readonly unknown[], { prepared = false, mayLag = false } = {}): Promise<T[]> {
    const pool = this.pool();
    // A read on MySQL takes no lock (a consistent read); one on SQLite may find the file held.
    if (!pool) return this.retried(() => this.onSqlite(() => this.timed(sql, () => this.dataSource.query<T[]>(sql, [...params]))));
    const replica = mayLag ? this.replicas?.pick() : undefined;
    if (!replica) return this.onPool<T[]>(pool, sql, params, prepared);
    replica.counted();
    return this.onPool<T[]>(replica.pool, sql, params, prepared).catch(() => {
      replica.failed();
      return this.onPool<T[]>(pool, sql, params, prepared);
    });
  }

  /** Whether reads marked `mayLag` can go anywhere but the primary (replicas are configured). */
  get hasReplicas(): boolean {
    return this.replicas !== undefined;
  }

  /** An INSERT, UPDATE or DELETE, on its own (autocommit): tried again when it loses a lock conflict (see `retried`). */
  async write(sql: string, params: readonly unknown[]): Promise<WriteResult> {
    const pool = this.pool();
    if (pool) {
      const header = await this.retried(() => this.onPool<ResultSetHeader>(pool, sql, params, false));
      return { affected: header.affectedRows, insertId: sqlInt(header.insertId) };
    }
    return this.retried(() => this.onSqlite(() => this.sqliteWrite(sql, params)));
  }

  /**
   * Runs `statements` as one transaction and returns what each gave; on the first error, rolls
   * back and throws it. MySQL: one round trip (a multi-statement query framed by START
   * TRANSACTION and COMMIT, on a connection of its own until it has ended), so the locks it takes
   * are held for the time the server needs, not for several round trips. SQLite: BEGIN
   * IMMEDIATE and the statements one after another, while every other statement of this process
   * waits (one connection: a statement issued meanwhile would land inside the transaction).
   *
   * `readCommitted` (MySQL) runs the transaction at READ COMMITTED: its statements lock the rows
   * they change and no gaps between index entries, so a long one (a trainer deleted with its
   * creatures) does not hold back inserts of other trainers' rows that fall next to them.
   *
   * A transaction that loses a lock conflict is run again whole (see `retried`).
   *
   * `withoutForeignKeys` runs it with this connection's foreign key checks and actions off (and
   * on again after it, whatever happened): a parent row can then be deleted while its children
   * stay behind, to be removed later in short statements (a trainer's deletion, which would
   * otherwise remove all its creatures in one ON DELETE CASCADE). Every other statement keeps them.
   */
  async batch(statements: readonly BatchStatement[], { readCommitted = false, withoutForeignKeys = false } = {}): Promise<BatchResult[]> {
    const pool = this.pool();
    if (!pool) return this.retried(() => this.sqliteBatch(statements, withoutForeignKeys));
    return this.retried(() => this.mysqlBatch(pool, statements, readCommitted, withoutForeignKeys));
  }

  /**
   * Runs `attempt` (one statement, or one transaction from its start) until it does not lose a
   * lock conflict (isLockConflict: a deadlock or a lock wait that timed out on MySQL, a database
   * another connection holds on SQLite). The database undid all of it, so it runs again whole,
   * after a wait that grows with each try and is drawn at random, so that the two sides of a
   * deadlock do not meet again in step. After the last try: SERVICE_UNAVAILABLE with
   * Retry-After (lockConflictAsAppError), never an unexpected error.
   */
  private async retried<T>(attempt: () => Promise<T>): Promise<T> {
    const { attempts, baseMs, capMs } = this.retry;
    for (let tried = 1; ; tried += 1) {
      try {
        return await attempt();
      } catch (error) {
        if (!isLockConflict(error)) throw error;
        if (tried >= attempts) {
          this.metrics.lockConflicts.inc({ outcome: 'gave_up' });
          throw lockConflictAsAppError(error);
        }
        this.metrics.lockConflicts.inc({ outcome: 'retried' });
        const ceiling = Math.min(capMs, baseMs * 2 ** (tried - 1));
        await sleep(ceiling / 2 + (Math.random() * ceiling) / 2);
      }
    }
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

  private async sqliteBatch(statements: readonly BatchStatement[], withoutForeignKeys: boolean): Promise<BatchResult[]> {
    while (this.sqliteTransaction) await this.sqliteTransaction;
    let end!: () => void;
    this.sqliteTransaction = new Promise<void>((resolve) => (end = resolve));
    const runner = this.dataSource.createQueryRunner();
    try {
      if (this.sqliteUnderWay > 0) await new Promise<void>((resolve) => (this.sqliteQuiet = resolve));
      this.sqliteQuiet = undefined;
      if (withoutForeignKeys) await runner.query(SQLITE_FOREIGN_KEYS_OFF);
      await this.timed(BEGIN_IMMEDIATE, () => runner.query(BEGIN_IMMEDIATE));
      const results: BatchResult[] = [];
      try {
        for (const { sql, params } of statements) {
          const result = (await this.timed(sql, () => runner.query(sql, [...params], true))) as QueryResult<unknown>;
          // Statements that return rows (SELECT, RETURNING) give them as `raw`; the others, the new row id.
          results.push(
            Array.isArray(result.raw)
              ? { rows: result.raw as unknown[], affected: result.raw.length, insertId: 0 }
              : { rows: [], affected: result.affected ?? 0, insertId: Number(result.raw) },
          );
        }
        // Inside: a COMMIT that fails leaves no transaction open on the one connection.
        await this.timed(COMMIT, () => runner.query(COMMIT));
      } catch (error) {
        await runner.query(ROLLBACK).catch(() => undefined);
        throw error;
      }
      return results;
    } finally {
      try {
        if (withoutForeignKeys) await runner.query(SQLITE_FOREIGN_KEYS_ON);
      } finally {
        // Whatever the pragma did, the one connection is handed back and the next batch may start.
        await runner.release();
        this.sqliteTransaction = undefined;
        end();
      }
    }
  }

  private async mysqlBatch(
    pool: Pool,
    statements: readonly BatchStatement[],
    readCommitted: boolean,
    withoutForeignKeys: boolean,
  ): Promise<BatchResult[]> {
    this.load.started();
    let connection: PoolConnection;
    try {
      connection = await new Promise<PoolConnection>((resolve, reject) =>
        pool.getConnection((error, got) => (error ? reject(unavailableAsAppError(error)) : resolve(got))),
      );
    } catch (error) {
      this.load.settled();
      throw error;
    }
    const logger = this.dataSource.logger;
    for (const { sql } of statements) logger.logQuery(sql);
    const {
      sql: text,
      parts,
      opening,
      closing,
    } = mysqlTransaction(
      statements.map((s) => s.sql),
      readCommitted,
      withoutForeignKeys,
    );
    const started = performance.now();
    try {
      const galera = this.galera ?? (this.galera = await isGaleraNode(connection, this.limits.timeoutMs));
      const results = galera
        ? await stepByStep(connection, parts, opening, statements, this.limits.timeoutMs)
        : await new Promise<unknown[]>((resolve, reject) =>
            connection.query({ sql: text, values: statements.flatMap((s) => s.params), timeout: this.limits.timeoutMs }, (error, answer) =>
              error ? reject(error) : resolve(answer as unknown[]),
            ),
          );
      connection.release();
      return results
        .slice(opening, -closing)
        .map((result) =>
          Array.isArray(result)
            ? { rows: result, affected: result.length, insertId: 0 }
            : { rows: [], affected: (result as ResultSetHeader).affectedRows, insertId: sqlInt((result as ResultSetHeader).insertId) },
        );
    } catch (error) {
      // A statement failed (the rest did not run) or the connection did: never hand back a
      // connection with a transaction open.
      // Nor one whose foreign key checks may still be off.
      const fatal = (error as { fatal?: boolean }).fatal === true || withoutForeignKeys;
      if (fatal) connection.destroy();
      else {
        await new Promise<void>((resolve) =>
          connection.query(ROLLBACK, (failed) => {
            if (failed) connection.destroy();
            else connection.release();
            resolve();
          }),
        );
      }
      throw unavailableAsAppError(error);
    } finally {
      this.load.settled();
      this.reportIfSlow(text, started);
    }
  }

  /** Reports the statement as slow when it took at least SLOW_QUERY_MS (TypeORM's own report is off). */
  private async timed<T>(sql: string, statement: () => Promise<T>): Promise<T> {
    if (this.tracing) return this.tracing.statement('sqlite', sql, () => this.timedUntraced(sql, statement));
    return this.timedUntraced(sql, statement);
  }

  private async timedUntraced<T>(sql: string, statement: () => Promise<T>): Promise<T> {
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
    this.load.started();
    return new Promise<T>((resolve, reject) => {
      const done = (error: Error | null, result: unknown) => {
        this.load.settled();
        this.reportIfSlow(sql, started);
        if (error) reject(unavailableAsAppError(error));
        else resolve(result as T);
      };
      const options = { sql, values: [...params] as unknown[], timeout: this.limits.timeoutMs };
      try {
        if (prepared) pool.execute(options, done);
        else pool.query(options, done);
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  }
}

function queryOn(connection: PoolConnection, sql: string, values: unknown[], timeout: number): Promise<unknown> {
  return new Promise((resolve, reject) =>
    connection.query({ sql, values, timeout }, (error, answer) => (error ? reject(error) : resolve(answer))),
  );
}

/**
 * Whether `connection`'s server is a Galera node: MariaDB answers 1 on a node and 0 on a server
 * alone; MySQL has no such variable. Any other failure (the server away, a timeout) is thrown, so
 * that nothing is remembered of it and the transaction fails as the database being away.
 */
async function isGaleraNode(connection: PoolConnection, timeout: number): Promise<boolean> {
  try {
    const [row] = (await queryOn(connection, IS_GALERA, [], timeout)) as { galera: number | string }[];
    return Number(row?.galera) === 1;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ER_UNKNOWN_SYSTEM_VARIABLE') return false;
    throw error;
  }
}

/**
 * A transaction's statements one round trip each, on a Galera node. A transaction that a
 * conflicting commit from another node aborts is rolled back by the node, and the statement sent
 * next fails with a deadlock; sent as one multi-statement query, the node ran the statements after
 * the abort on their own (autocommit), so half a transaction was stored, or retried by the node
 * itself twice. Here nothing follows the failed statement, and the whole transaction is tried again.
 */
async function stepByStep(
  connection: PoolConnection,
  parts: readonly string[],
  opening: number,
  statements: readonly BatchStatement[],
  timeout: number,
): Promise<unknown[]> {
  const results: unknown[] = [];
  for (const [index, sql] of parts.entries()) {
    const statement = statements[index - opening] as BatchStatement | undefined;
    results.push(await queryOn(connection, sql, statement ? [...statement.params] : [], timeout));
  }
  return results;
}
