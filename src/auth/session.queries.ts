import { placeholders, sqlDate, sqlInt, type Sql } from '../db/sql';

/*
 * Every statement about sessions (table trainer_session). SessionService calls these; the one
 * piece used elsewhere is liveSessionsColumn, which the trainers' merged read selects so that the
 * caller check learns, in the statement it already makes, whether the callers' sessions are open.
 */

/**
 * The one rule of an open session `s`, with its one placeholder for now: a session that was
 * logged out or ended has no row, so a row is open until it expires.
 */
const OPEN = 's.expires_at > ?';

/** A session as a refresh finds it by its token's family. */
export interface SessionRow {
  readonly id: number;
  readonly trainerId: number;
  /** The hash of the secret of the one refresh token that is not spent yet. */
  readonly tokenHash: string;
  readonly expiresAt: Date;
  /** The hash of the secret the last refresh spent, and until when it may come again (null before any refresh). */
  readonly previousHash: string | null;
  readonly previousUntil: Date | null;
}

/**
 * A column for `SELECT ... FROM trainer t`: for the `callers` trainers (their placeholders come
 * first, then one for now), the ids of their open sessions, comma-separated (null when none; null
 * for every other row). Read through the (trainer_id) index: a trainer holds at most
 * MAX_SESSIONS_PER_TRAINER sessions. Neither an IN list of session ids inside the subquery (it
 * probes every listed id for every row) nor a GROUP BY join (MariaDB materialises it for every
 * merged statement) does as well; the commit that chose this form has the measurements.
 */
export const liveSessionsColumn = (callers: number): string =>
  `CASE WHEN t.id IN (${placeholders(callers)}) THEN (SELECT GROUP_CONCAT(s.id) FROM trainer_session s WHERE s.trainer_id = t.id AND ${OPEN}) END`;

/** The ids in a liveSessionsColumn. mysql2 may hand GROUP_CONCAT over as bytes. */
export function parseLiveSessions(value: string | Buffer | null | undefined): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map((id) => Number(id));
}

/**
 * A condition that holds while the session `sessionId` of `trainerId` is open (not logged out,
 * ended or expired at `now`): for writes that a session's proof allows, so that they happen only
 * if the session is still open when they are written.
 */
export const sessionOpen = (trainerId: number, sessionId: number, now: Date | string): { sql: string; params: unknown[] } => ({
  sql: `EXISTS (SELECT 1 FROM trainer_session s WHERE s.id = ? AND s.trainer_id = ? AND ${OPEN})`,
  params: [sessionId, trainerId, now],
});

/**
 * The statement that ends a trainer's sessions inside another write's transaction (a password
 * change, which keeps `except`, the caller's; a deletion, which keeps none), only while `onlyIf`
 * holds (a condition on other tables: what the write before it in the transaction did).
 */
export const endSessionsStatement = (
  trainerId: number,
  except?: number,
  onlyIf?: { sql: string; params: readonly unknown[] },
): { sql: string; params: unknown[] } => {
  const guard = onlyIf === undefined ? '' : ` AND ${onlyIf.sql}`;
  const guardParams = onlyIf?.params ?? [];
  return except === undefined
    ? { sql: `DELETE FROM trainer_session WHERE trainer_id = ?${guard}`, params: [trainerId, ...guardParams] }
    : { sql: `DELETE FROM trainer_session WHERE trainer_id = ? AND id <> ?${guard}`, params: [trainerId, except, ...guardParams] };
};

export class SessionQueries {
  constructor(private readonly sql: Sql) {}

  /**
   * Opens a session and returns its id. With `passwordHash` (a login), only while the trainer
   * still exists with that password hash (null otherwise): a login whose password was checked
   * just before a password change or a deletion committed opens no session after it.
   */
  async insert(
    trainerId: number,
    familyHash: string,
    tokenHash: string,
    createdAt: Date,
    expiresAt: Date,
    passwordHash?: string,
  ): Promise<number | null> {
    const values = [trainerId, familyHash, tokenHash, this.sql.date(createdAt), this.sql.date(expiresAt)];
    if (passwordHash === undefined) {
      const { insertId } = await this.sql.write(
        'INSERT INTO trainer_session (trainer_id, family_hash, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        values,
      );
      return insertId;
    }
    const { affected, insertId } = await this.sql.write(
      'INSERT INTO trainer_session (trainer_id, family_hash, token_hash, created_at, expires_at) SELECT ?, ?, ?, ?, ? FROM trainer WHERE id = ? AND password_hash = ?',
      [...values, trainerId, passwordHash],
    );
    return affected === 0 ? null : insertId;
  }

  async byFamily(familyHash: string): Promise<SessionRow | null> {
    const [row] = await this.sql.rows<{
      id: number | string;
      trainerId: number | string;
      tokenHash: string;
      expiresAt: Date | string;
      previousHash: string | null;
      previousUntil: Date | string | null;
    }>(
      'SELECT id, trainer_id AS trainerId, token_hash AS tokenHash, expires_at AS expiresAt, previous_hash AS previousHash, previous_until AS previousUntil FROM trainer_session WHERE family_hash = ?',
      [familyHash],
      { prepared: true },
    );
    if (!row) return null;
    return {
      id: sqlInt(row.id),
      trainerId: sqlInt(row.trainerId),
      tokenHash: row.tokenHash,
      expiresAt: sqlDate(row.expiresAt),
      previousHash: row.previousHash,
      previousUntil: row.previousUntil === null ? null : sqlDate(row.previousUntil),
    };
  }

  /**
   * Replaces a session's current secret `from` with `to`, with a new expiry, and keeps `from` as
   * the previous one until `previousUntil`: the one atomic step of a refresh. Of two refreshes
   * with the same token, exactly one finds `from` still current.
   */
  async rotate(id: number, from: string, to: string, expiresAt: Date, previousUntil: Date): Promise<boolean> {
    const { affected } = await this.sql.write(
      // previous_hash from a parameter, not `= token_hash`: MySQL assigns left to right, with the new values.
      'UPDATE trainer_session SET token_hash = ?, expires_at = ?, previous_hash = ?, previous_until = ? WHERE id = ? AND token_hash = ?',
      [to, this.sql.date(expiresAt), from, this.sql.date(previousUntil), id, from],
    );
    return affected === 1;
  }

  async delete(id: number): Promise<void> {
    await this.sql.write('DELETE FROM trainer_session WHERE id = ?', [id]);
  }

  async deleteOfTrainer(trainerId: number): Promise<number> {
    return (await this.sql.write('DELETE FROM trainer_session WHERE trainer_id = ?', [trainerId])).affected;
  }

  /** Deletes a trainer's sessions but the newest `keep`; the newest id of those deleted, if any were. */
  async keepNewest(trainerId: number, keep: number): Promise<number | undefined> {
    const [cutoff] = await this.sql.rows<{ id: number | string }>(
      `SELECT id FROM trainer_session WHERE trainer_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${Math.trunc(keep)}`,
      [trainerId],
    );
    if (!cutoff) return undefined;
    const upTo = sqlInt(cutoff.id);
    await this.sql.write('DELETE FROM trainer_session WHERE trainer_id = ? AND id <= ?', [trainerId, upTo]);
    return upTo;
  }

  /** Up to `limit` sessions that expired before `now`, oldest expiry first (the expires_at index). */
  async expired(now: Date, limit: number): Promise<number[]> {
    const rows = await this.sql.rows<{ id: number | string }>(
      `SELECT id FROM trainer_session WHERE expires_at <= ? ORDER BY expires_at LIMIT ${Math.trunc(limit)}`,
      [this.sql.date(now)],
    );
    return rows.map((row) => sqlInt(row.id));
  }

  /** Deletes those of `ids` that are still expired at `now` (one may have been refreshed meanwhile). */
  async deleteExpired(ids: readonly number[], now: Date): Promise<number> {
    if (ids.length === 0) return 0;
    const { affected } = await this.sql.write(`DELETE FROM trainer_session WHERE id IN (${placeholders(ids.length)}) AND expires_at <= ?`, [
      ...ids,
      this.sql.date(now),
    ]);
    return affected;
  }
}
