/*
 * The statements with which Sql (sql.ts) frames a transaction: the connection layer's only SQL.
 * The statements inside a transaction come from the modules' query files.
 */

/** SQLite: a transaction that holds the write lock from its start (it cannot fail to take it midway). */
export const BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE';
export const COMMIT = 'COMMIT';
export const ROLLBACK = 'ROLLBACK';

/**
 * SQLite: foreign keys off and on again, around a transaction whose rows of a child table are to
 * outlive their parent for a while (PRAGMA foreign_keys is a no-op inside a transaction).
 */
export const SQLITE_FOREIGN_KEYS_OFF = 'PRAGMA foreign_keys = OFF';
export const SQLITE_FOREIGN_KEYS_ON = 'PRAGMA foreign_keys = ON';

/** Whether the server is a node of a Galera cluster (MariaDB: 1 on a node, 0 on a server alone; MySQL: no such variable). */
export const IS_GALERA = 'SELECT @@wsrep_on AS galera';

/** Each MySQL connection's reads wait for what the cluster has committed, on a Galera node (see data-source.ts). */
export const CAUSAL_READS = 'SET SESSION wsrep_sync_wait = 1';

/**
 * MySQL: `statements` as one transaction in one multi-statement query, and how many results of
 * the query's answer come before the statements' own (one more, the COMMIT's, comes after).
 * `readCommitted` runs it at READ COMMITTED: SET TRANSACTION applies to the next transaction
 * only, so the connection goes back to the pool as it was. `withoutForeignKeys` turns the
 * session's foreign key checks off before and on again after (the caller destroys the connection
 * rather than hand it back when the query fails midway). Also how many results come after the
 * statements' own.
 */
export function mysqlTransaction(
  statements: readonly string[],
  readCommitted: boolean,
  withoutForeignKeys = false,
): { sql: string; parts: string[]; opening: number; closing: number } {
  const opening = [
    // The session's foreign key checks, off until the commit (and on again after it): see Sql.batch.
    ...(withoutForeignKeys ? ['SET SESSION foreign_key_checks = 0'] : []),
    ...(readCommitted ? ['SET TRANSACTION ISOLATION LEVEL READ COMMITTED'] : []),
    'START TRANSACTION',
  ];
  const closing = [COMMIT, ...(withoutForeignKeys ? ['SET SESSION foreign_key_checks = 1'] : [])];
  const parts = [...opening, ...statements, ...closing];
  return { sql: parts.join(';\n'), parts, opening: opening.length, closing: closing.length };
}
