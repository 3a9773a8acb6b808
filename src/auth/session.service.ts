import { createHash, randomBytes } from 'node:crypto';
import { AppError } from '../errors';
import type { SessionQueries } from './session.queries';

/** A refresh token: 32 random bytes (256 bits), base64url. */
const TOKEN_BYTES = 32;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Sessions a trainer may hold; signing in once more ends the oldest. */
export const MAX_SESSIONS_PER_TRAINER = 50;
/**
 * Spent refresh tokens remembered per session (their hashes), so that replaying one of them is
 * recognised as a replay and ends the session. An older one is merely unknown: refused, no more.
 */
const REMEMBERED_GENERATIONS = 10;
/** Expired sessions deleted per statement by purgeExpired, and the most statements per call. */
const PURGE_BATCH = 500;
const PURGE_MAX_BATCHES = 200;

export interface SessionTokens {
  readonly sessionId: number;
  readonly trainerId: number;
  readonly refreshToken: string;
  readonly refreshExpiresAt: Date;
}

const refused = (): AppError => new AppError('UNAUTHENTICATED', 'Invalid, expired or revoked refresh token');

/** Refresh tokens are random, so a fast hash is enough: nothing can be guessed from it. */
const hashOf = (token: string): string => createHash('sha256').update(token).digest('base64url');

/**
 * Sessions with refresh-token rotation and replay detection (RFC 9700, 4.14.2): every sign-in
 * opens a session; each refresh token can be used once and is replaced by a new one; presenting
 * a spent one again ends the whole session, so a stolen token is useless to thief and owner
 * alike. Ending a session also ends its access tokens: the caller check reads whether the
 * session is open with every authenticated request (TrainerService.findCaller).
 */
export class SessionService {
  constructor(
    private readonly queries: SessionQueries,
    private readonly ttlSeconds: number,
  ) {}

  /** Opens a session for a trainer who has just proved who it is, and ends its oldest beyond the cap. */
  async open(trainerId: number, now = new Date()): Promise<SessionTokens> {
    const refreshExpiresAt = this.expiry(now);
    const sessionId = await this.queries.insert(trainerId, now, refreshExpiresAt);
    const refreshToken = randomBytes(TOKEN_BYTES).toString('base64url');
    await this.queries.insertToken(hashOf(refreshToken), sessionId, 0);
    await this.queries.keepNewest(trainerId, MAX_SESSIONS_PER_TRAINER);
    return { sessionId, trainerId, refreshToken, refreshExpiresAt };
  }

  /**
   * Spends a refresh token for the next one of its session. UNAUTHENTICATED when the token is
   * unknown, expired or its session ended; when it was already spent, the session ends too.
   */
  async rotate(refreshToken: string, now = new Date()): Promise<SessionTokens> {
    if (!TOKEN_PATTERN.test(refreshToken)) throw refused();
    const found = await this.queries.byTokenHash(hashOf(refreshToken));
    if (!found || found.expiresAt <= now) throw refused();
    const { sessionId, trainerId } = found;
    const generation = found.sessionGeneration + 1;
    const next = randomBytes(TOKEN_BYTES).toString('base64url');
    // The next token is stored before the session moves on, so the refresh that moves it has
    // nothing left to fail on. A spent token, or a race lost to another refresh with the same
    // token, is a replay: the session ends, with every token of it (the next ones included).
    const spent = found.tokenGeneration !== found.sessionGeneration;
    if (
      spent ||
      !(await this.queries.insertToken(hashOf(next), sessionId, generation)) ||
      !(await this.queries.advance(sessionId, found.sessionGeneration, this.expiry(now)))
    ) {
      await this.queries.delete(sessionId);
      throw refused();
    }
    await this.queries.forgetTokensBefore(sessionId, generation - REMEMBERED_GENERATIONS);
    return { sessionId, trainerId, refreshToken: next, refreshExpiresAt: this.expiry(now) };
  }

  /** Ends one session: its refresh token and its access tokens stop working at once. */
  async end(sessionId: number): Promise<void> {
    await this.queries.delete(sessionId);
  }

  /** Ends every session of a trainer. */
  async endAll(trainerId: number): Promise<void> {
    await this.queries.deleteOfTrainer(trainerId);
  }

  /**
   * Deletes sessions that expired before `now`, in batches of PURGE_BATCH (short statements that
   * hold no long locks), yielding to other work between batches; how many it deleted.
   */
  async purgeExpired(now = new Date(), batch = PURGE_BATCH): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < PURGE_MAX_BATCHES; i += 1) {
      const ids = await this.queries.expired(now, batch);
      deleted += await this.queries.deleteExpired(ids, now);
      if (ids.length < batch) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return deleted;
  }

  private expiry(now: Date): Date {
    return new Date(now.getTime() + this.ttlSeconds * 1000);
  }
}

/** How often each instance deletes expired sessions (several instances may; the deletes do not conflict). */
const PURGE_EVERY_MS = 10 * 60_000;
/** The first purge comes soon after start, so that a fleet restarted often still purges. */
const FIRST_PURGE_MS = 30_000;

/**
 * Runs SessionService.purgeExpired now and then, until stopped (the app's onClose). A failed
 * purge (the database away) is logged and tried again at the next turn.
 */
export function schedulePurge(
  sessions: SessionService,
  log: { info(details: object, message: string): void; warn(details: object, message: string): void },
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout;
  const run = () => {
    running = sessions
      .purgeExpired()
      .then((deleted) => {
        if (deleted > 0) log.info({ deleted }, 'expired sessions purged');
      })
      .catch((error: unknown) => log.warn({ err: error }, 'purging expired sessions failed; trying again later'))
      .finally(() => {
        running = undefined;
        timer = setTimeout(run, PURGE_EVERY_MS).unref();
      });
  };
  timer = setTimeout(run, FIRST_PURGE_MS).unref();
  return {
    async stop() {
      clearTimeout(timer);
      await running;
      clearTimeout(timer);
    },
  };
}
