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
