/*
 * The statements with which Sql (sql.ts) frames a transaction: the connection layer's only SQL.
 * The statements inside a transaction come from the modules' query files.
 */

/** SQLite: a transaction that holds the write lock from its start (it cannot fail to take it midway). */
export const BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE';
export const COMMIT = 'COMMIT';
export const ROLLBACK = 'ROLLBACK';

/**
 * MySQL: `statements` as one transaction in one multi-statement query, and how many results of
 * the query's answer come before the statements' own (one more, the COMMIT's, comes after).
 * `readCommitted` runs it at READ COMMITTED: SET TRANSACTION applies to the next transaction
 * only, so the connection goes back to the pool as it was.
 */
export function mysqlTransaction(statements: readonly string[], readCommitted: boolean): { sql: string; opening: number } {
  const opening = readCommitted ? ['SET TRANSACTION ISOLATION LEVEL READ COMMITTED', 'START TRANSACTION'] : ['START TRANSACTION'];
  return { sql: [...opening, ...statements, COMMIT].join(';\n'), opening: opening.length };
}
