import { QueryFailedError } from 'typeorm';
import { AppError } from '../errors';

interface DriverError {
  code?: string;
  errno?: number;
  message?: string;
}

function driverError(error: unknown): DriverError | undefined {
  if (error instanceof QueryFailedError) return error.driverError as DriverError;
  if (error && typeof error === 'object' && 'code' in error) return error as DriverError;
  return undefined;
}

/** Unique index name -> the column it guards, for the databases that name the index. */
const INDEX_COLUMNS: Record<string, string> = {
  UQ_trainer_email: 'email',
  UQ_trainer_nickname_key: 'nickname_key',
  UQ_creature_trainer_name: 'name_key',
};

/**
 * The column whose unique index a failed insert ran into ('email', 'nickname_key',
 * 'name_key'...), '' when it cannot be told, or undefined when the error is something else.
 * MariaDB names the index (`Duplicate entry 'x' for key 'UQ_trainer_email'`: the value itself
 * must not be read), SQLite the columns (`UNIQUE constraint failed: trainer.email`).
 */
export function uniqueViolation(error: unknown): string | undefined {
  const e = driverError(error);
  if (!e) return undefined;
  const message = e.message ?? '';
  if (e.code === 'ER_DUP_ENTRY') {
    const key = /for key '(?:[^'.]+\.)?([^']+)'$/.exec(message)?.[1];
    return (key && INDEX_COLUMNS[key]) ?? '';
  }
  if (e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const columns = /UNIQUE constraint failed: (.+)$/.exec(message)?.[1] ?? '';
    return (
      columns
        .split(',')
        .map((c) => c.trim().split('.').pop())
        .pop() ?? ''
    );
  }
  return undefined;
}

export function isForeignKeyViolation(error: unknown): boolean {
  const code = driverError(error)?.code;
  return code === 'ER_NO_REFERENCED_ROW_2' || code === 'ER_NO_REFERENCED_ROW' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'SQLITE_CANTOPEN',
]);

/** True when the database could not be reached or is shutting down: SERVICE_UNAVAILABLE, not a bug. */
/** Socket codes that a client hanging up also produces: they mean the database only coming from the driver. */
const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

export function isDatabaseUnavailable(error: unknown): boolean {
  const e = driverError(error);
  const code = e?.code;
  if (code && SOCKET_CODES.has(code)) {
    const fromDriver = error instanceof QueryFailedError || (e as { fatal?: unknown }).fatal === true;
    if (!fromDriver) return false;
  }
  if (code && UNAVAILABLE_CODES.has(code)) return true;
  const message = error instanceof Error ? error.message : '';
  // A Galera node outside the cluster's primary component, or rejoining it: 1047 "WSREP has not
  // yet prepared node for application use" (the same code also means a command the server does
  // not know, which this service never sends).
  if (code === 'ER_UNKNOWN_COM_ERROR' && /WSREP/.test(message)) return true;
  // The pool or file is closed: the app is shutting down, or the database went away.
  return /Pool is closed|Connection lost|connect ETIMEDOUT|Can't add new command when connection is in closed state|Connection is not established|database connection is not open|Queue limit reached|Query inactivity timeout/i.test(
    message,
  );
}

/** Seconds a client is told to wait (Retry-After) while the database is away: a restart or a Galera node rejoining takes a few. */
const DATABASE_UNAVAILABLE_RETRY_AFTER_S = 2;

/**
 * A database that is away becomes SERVICE_UNAVAILABLE while the driver's error still has its
 * code. GraphQL needs this before graphql-js sees the error: it keeps only `instanceof Error`
 * values, and a driver's socket error can come from another realm (as under Jest).
 */
export function unavailableAsAppError<E>(error: E): E | AppError {
  if (!(error instanceof AppError) && isDatabaseUnavailable(error)) {
    const unavailable = new AppError(
      'SERVICE_UNAVAILABLE',
      'The service is temporarily unavailable; try again shortly',
      undefined,
      DATABASE_UNAVAILABLE_RETRY_AFTER_S,
    );
    // The driver's error, for the log (logIfUnexpected); clients see only the code and message.
    unavailable.cause = error;
    return unavailable;
  }
  return error;
}

/**
 * Codes of a statement or transaction that lost a lock conflict, which the database undid:
 * MySQL's deadlock (the whole transaction rolled back) and lock wait timeout (the statement;
 * Sql rolls back the rest), SQLite's SQLITE_BUSY and its extended codes (another connection,
 * e.g. `npm run reconcile` in another process, holds the database). Running it again is safe.
 */
const LOCK_CONFLICT_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

export function isLockConflict(error: unknown): boolean {
  const code = driverError(error)?.code;
  return code !== undefined && (LOCK_CONFLICT_CODES.has(code) || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

/** Seconds a client is told to wait (Retry-After) when its write lost every try at a lock conflict. */
const LOCK_CONFLICT_RETRY_AFTER_S = 1;

/** A lock conflict that tries again did not get past: SERVICE_UNAVAILABLE with Retry-After, never a 500. */
export function lockConflictAsAppError(error: unknown): AppError {
  const busy = new AppError('SERVICE_UNAVAILABLE', 'The database is busy; try again shortly', undefined, LOCK_CONFLICT_RETRY_AFTER_S);
  // The driver's error, for the log (logIfUnexpected); clients see only the code and message.
  busy.cause = error;
  return busy;
}
