import { isForeignKeyViolation } from '../db/errors';
import { placeholders, sqlDate, sqlInt, type Sql } from '../db/sql';

/*
 * Every statement about sessions and their refresh tokens (tables trainer_session and
 * refresh_token). SessionService calls these; the one piece used elsewhere is LIVE_SESSIONS,
 * which the trainers' merged read selects so that the caller check learns, in the statement it
 * already makes, whether the caller's session is still open.
 */

/** What a refresh token leads to: its session, as it is now. */
export interface RefreshTokenRow {
  readonly sessionId: number;
  readonly trainerId: number;
  /** The generation the token was issued for; spent when lower than the session's. */
  readonly tokenGeneration: number;
  readonly sessionGeneration: number;
  readonly expiresAt: Date;
}

/**
 * A column for `SELECT ... FROM trainer t`: which of `count` session ids (placeholders, then one
 * for now) are open sessions of that trainer, comma-separated, or null when none is.
 */
export const liveSessionsColumn = (count: number): string =>
  `(SELECT GROUP_CONCAT(s.id) FROM trainer_session s WHERE s.trainer_id = t.id AND s.id IN (${placeholders(count)}) AND s.expires_at > ?)`;

/** The ids a liveSessionsColumn holds. mysql2 may hand GROUP_CONCAT over as bytes. */
export function parseLiveSessions(value: string | Buffer | null | undefined): number[] {
  if (value === null || value === undefined) return [];
  return String(value)
    .split(',')
    .map((id) => Number(id));
}

export class SessionQueries {
  constructor(private readonly sql: Sql) {}

  /** Opens a session (generation 0) and returns its id. */
  async insert(trainerId: number, createdAt: Date, expiresAt: Date): Promise<number> {
    const { insertId } = await this.sql.write(
      'INSERT INTO trainer_session (trainer_id, generation, created_at, expires_at) VALUES (?, 0, ?, ?)',
      [trainerId, this.sql.date(createdAt), this.sql.date(expiresAt)],
    );
    return insertId;
  }

  /** Stores a refresh token's hash for a generation of a session; false when the session is gone. */
  async insertToken(tokenHash: string, sessionId: number, generation: number): Promise<boolean> {
    try {
      await this.sql.write('INSERT INTO refresh_token (token_hash, session_id, generation) VALUES (?, ?, ?)', [
        tokenHash,
        sessionId,
        generation,
      ]);
      return true;
    } catch (error) {
      if (isForeignKeyViolation(error)) return false;
      throw error;
    }
  }

  async byTokenHash(tokenHash: string): Promise<RefreshTokenRow | null> {
    const [row] = await this.sql.rows<{
      sessionId: number | string;
      trainerId: number | string;
      tokenGeneration: number | string;
      sessionGeneration: number | string;
      expiresAt: Date | string;
    }>(
      'SELECT s.id AS sessionId, s.trainer_id AS trainerId, r.generation AS tokenGeneration, s.generation AS sessionGeneration, s.expires_at AS expiresAt FROM refresh_token r JOIN trainer_session s ON s.id = r.session_id WHERE r.token_hash = ?',
      [tokenHash],
      { prepared: true },
    );
    if (!row) return null;
    return {
      sessionId: sqlInt(row.sessionId),
      trainerId: sqlInt(row.trainerId),
      tokenGeneration: sqlInt(row.tokenGeneration),
      sessionGeneration: sqlInt(row.sessionGeneration),
      expiresAt: sqlDate(row.expiresAt),
    };
  }

  /**
   * Moves a session from generation `from` to the next, with a new expiry. The one atomic step
   * of a refresh: of two refreshes with the same token, exactly one finds `from` still current.
   */
  async advance(sessionId: number, from: number, expiresAt: Date): Promise<boolean> {
    const { affected } = await this.sql.write(
      'UPDATE trainer_session SET generation = generation + 1, expires_at = ? WHERE id = ? AND generation = ?',
      [this.sql.date(expiresAt), sessionId, from],
    );
    return affected === 1;
  }

  /** Forgets a session's refresh tokens older than `generation` (they can no longer be told from unknown ones). */
  async forgetTokensBefore(sessionId: number, generation: number): Promise<void> {
    await this.sql.write('DELETE FROM refresh_token WHERE session_id = ? AND generation < ?', [sessionId, generation]);
  }

  /** Deletes a session; its refresh tokens go with it (foreign key, ON DELETE CASCADE). */
  async delete(sessionId: number): Promise<void> {
    await this.sql.write('DELETE FROM trainer_session WHERE id = ?', [sessionId]);
  }

  async deleteOfTrainer(trainerId: number): Promise<number> {
    return (await this.sql.write('DELETE FROM trainer_session WHERE trainer_id = ?', [trainerId])).affected;
  }

  /** Deletes a trainer's sessions but the newest `keep`; how many went. */
  async keepNewest(trainerId: number, keep: number): Promise<number> {
    const [cutoff] = await this.sql.rows<{ id: number | string }>(
      `SELECT id FROM trainer_session WHERE trainer_id = ? ORDER BY id DESC LIMIT 1 OFFSET ${Math.trunc(keep)}`,
      [trainerId],
    );
    if (!cutoff) return 0;
    return (await this.sql.write('DELETE FROM trainer_session WHERE trainer_id = ? AND id <= ?', [trainerId, sqlInt(cutoff.id)])).affected;
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
