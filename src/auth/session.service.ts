import type { Chore } from '../common/housekeeping';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';
import type { SessionEndings } from './session-endings';
import type { SessionQueries } from './session.queries';

/**
 * A refresh token: `<family>.<secret>`, 16 and 32 bytes in base64url (384 bits). The family part
 * is random and the same for every token of a session; the first secret is random, each next one
 * an HMAC of the token it replaces under a server key (see SessionService.successorOf).
 */
const FAMILY_BYTES = 16;
const SECRET_BYTES = 32;
const TOKEN_PATTERN = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
/** Sessions a trainer may hold; signing in once more ends the oldest. */
export const MAX_SESSIONS_PER_TRAINER = 50;
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

/** Both parts are random, so a fast hash is enough: nothing can be guessed from it. */
const hashOf = (text: string): string => createHash('sha256').update(text).digest('base64url');
const random = (bytes: number): string => randomBytes(bytes).toString('base64url');
const sameHash = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * Sessions with refresh-token rotation and replay detection (RFC 9700, 4.14.2): every sign-in
 * opens a session; each refresh token is replaced by a new one when used. Every token of a
 * session shares its family part, and the session keeps the hash of the one current secret:
 * a token of the family with any other secret is a spent one coming back (only those who held a
 * token of the family know its family part), so the session ends and the stolen token is useless
 * to thief and owner alike, however many refreshes came in between, in one row per session.
 *
 * One exception, as Auth0's reuse interval and Okta's grace period make it: the token the last
 * refresh spent may come again for `graceSeconds` (two tabs refreshing at once, a client retrying
 * a refresh whose answer it lost) and gets the same new pair again, without ending the session.
 * The new secret is a function of the spent token and a server key, so every presentation of one
 * token within the grace gets the same successor without the service storing it, and both tabs
 * hold the one current token afterwards, whichever of them saves its answer last.
 *
 * Ending a session also ends its access tokens: the caller check reads whether the session is
 * open with every authenticated request (TrainerService.findCaller).
 */
export class SessionService {
  /** The key of successorOf, derived from the token secret under a label of its own. */
  private readonly successorKey: Buffer;

  constructor(
    private readonly queries: SessionQueries,
    private readonly ttlSeconds: number,
    private readonly graceSeconds: number,
    serverSecret: string,
    /** Told of every session that ends here, so that what is open on its behalf (sockets) closes at once. */
    private readonly endings?: SessionEndings,
  ) {
    this.successorKey = createHmac('sha256', serverSecret).update('refresh-token:successor').digest();
  }

  /**
   * Opens a session for a trainer who has just proved who it is, and ends its oldest beyond the
   * cap. With `passwordHash` (the hash its password was checked against), UNAUTHENTICATED when
   * the trainer has changed its password or been deleted since.
   */
  async open(trainerId: number, { now = new Date(), passwordHash }: { now?: Date; passwordHash?: string } = {}): Promise<SessionTokens> {
    const family = random(FAMILY_BYTES);
    const secret = random(SECRET_BYTES);
    const refreshExpiresAt = this.expiry(now);
    const sessionId = await this.queries.insert(trainerId, hashOf(family), hashOf(secret), now, refreshExpiresAt, passwordHash);
    if (sessionId === null) throw new AppError('UNAUTHENTICATED', 'Wrong email or password');
    const upTo = await this.queries.keepNewest(trainerId, MAX_SESSIONS_PER_TRAINER);
    if (upTo !== undefined) this.endings?.publish({ trainerId, upTo });
    return { sessionId, trainerId, refreshToken: `${family}.${secret}`, refreshExpiresAt };
  }

  /**
   * Spends a refresh token for the next one of its session. UNAUTHENTICATED when the token is
   * unknown, expired or its session ended. The token the last refresh spent, presented again
   * within the grace, gets that refresh's pair again (same refresh token, same expiry, a new
   * access token); any other spent token, or that one after the grace, ends the session.
   */
  async rotate(refreshToken: string, now = new Date()): Promise<SessionTokens> {
    const parts = TOKEN_PATTERN.exec(refreshToken);
    if (!parts) throw refused();
    const [, family, secret] = parts;
    const familyHash = hashOf(family);
    let session = await this.queries.byFamily(familyHash);
    if (!session || session.expiresAt <= now) throw refused();
    const presented = hashOf(secret);
    const next = this.successorOf(family, secret);
    const nextHash = hashOf(next);
    const { id, trainerId } = session;
    const tokens = (refreshExpiresAt: Date): SessionTokens => ({
      sessionId: id,
      trainerId,
      refreshToken: `${family}.${next}`,
      refreshExpiresAt,
    });
    if (sameHash(presented, session.tokenHash)) {
      const refreshExpiresAt = this.expiry(now);
      const graceUntil = new Date(now.getTime() + this.graceSeconds * 1000);
      if (await this.queries.rotate(id, presented, nextHash, refreshExpiresAt, graceUntil)) return tokens(refreshExpiresAt);
      // A refresh with the same token rotated first: read what it wrote, then as a reuse below.
      session = await this.queries.byFamily(familyHash);
      if (!session || session.expiresAt <= now) throw refused();
    }
    if (
      session.previousHash !== null &&
      sameHash(presented, session.previousHash) &&
      session.previousUntil &&
      now < session.previousUntil
    ) {
      // Another successor means the server key changed since: refused, but not taken for a theft.
      if (!sameHash(nextHash, session.tokenHash)) throw refused();
      return tokens(session.expiresAt);
    }
    await this.queries.delete(session.id);
    this.endings?.publish({ trainerId: session.trainerId, sessionId: session.id });
    throw refused();
  }

  /**
   * The secret that follows `secret` in its session: HMAC-SHA256 of the token under a key derived
   * from the server secret. Only the server can compute it, and it is the same on every instance
   * and for every presentation of the token, so a reuse within the grace needs nothing stored.
   */
  private successorOf(family: string, secret: string): string {
    return createHmac('sha256', this.successorKey).update(`${family}.${secret}`).digest('base64url');
  }

  /**
   * Ends one session of a trainer: its refresh token and its access tokens stop working at once,
   * and its sockets close (on every instance).
   */
  async end(trainerId: number, sessionId: number): Promise<void> {
    await this.queries.delete(sessionId);
    this.endings?.publish({ trainerId, sessionId });
  }

  /** Ends every session of a trainer. */
  async endAll(trainerId: number): Promise<void> {
    await this.queries.deleteOfTrainer(trainerId);
    this.endings?.publish({ trainerId });
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

/**
 * Deleting expired sessions, on each instance now and then (several instances may; the deletes do
 * not conflict). The first comes soon after start, so that a fleet restarted often still purges.
 */
export const sessionPurge = (sessions: SessionService): Chore => ({
  label: 'purging expired sessions',
  run: () => sessions.purgeExpired(),
  firstMs: 30_000,
  everyMs: 10 * 60_000,
});
