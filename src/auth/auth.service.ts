import { matches, PASSWORD_PATTERN } from '../common/rules';
import { AppError } from '../errors';
import type { Trainer } from '../trainers/trainer.entity';
import type { TrainerService } from '../trainers/trainer.service';
import type { TokenIssuer } from './jwt';
import type { LoginThrottle } from './login-throttle';
import type { PasswordHasher } from './password';
import { RequestAuth } from './request-auth';
import type { SessionService, SessionTokens } from './session.service';

/** The answer to authenticate and refreshSession: an access token, the session's refresh token, the trainer. */
export interface Authentication {
  readonly token: string;
  readonly tokenType: 'Bearer';
  readonly expiresAt: Date;
  readonly refreshToken: string;
  readonly refreshExpiresAt: Date;
  readonly trainer: Trainer;
}

const WRONG_CREDENTIALS = 'Wrong email or password';

export class AuthService {
  constructor(
    private readonly trainers: TrainerService,
    private readonly tokens: TokenIssuer,
    private readonly throttle: LoginThrottle,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionService,
  ) {
    // Computed ahead, so the first unknown email costs no more than any other login.
    hasher.decoyHash().catch(() => undefined);
  }

  /**
   * Unknown email and wrong password give the same answer after the same work: a missing
   * account is checked against a decoy hash, so timing does not tell them apart either.
   */
  async authenticate(email: string, password: string, clientIp: string): Promise<Authentication> {
    // Before any hashing: a throttled attempt costs the server nothing.
    await this.throttle.attempt(email, clientIp);
    const credentials = await this.trainers.credentials(email);
    const correct = await this.hasher.verify(password, credentials?.passwordHash ?? (await this.hasher.decoyHash()));
    // No stored password has control characters; without this check scrypt would take
    // "secret\0" for "secret" (its HMAC pads keys with zero bytes).
    const trainer = credentials && correct && matches(PASSWORD_PATTERN, password) ? await this.trainers.findById(credentials.id) : null;
    if (!credentials || !trainer) throw new AppError('UNAUTHENTICATED', WRONG_CREDENTIALS);
    await this.throttle.succeeded(email, clientIp);
    // Only if the password it was checked against is still the trainer's (see SessionQueries.insert).
    const session = await this.sessions.open(trainer.id, { passwordHash: credentials.passwordHash });
    return this.answer(trainer, session);
  }

  /**
   * A new token pair for a refresh token, which is spent by it (see SessionService.rotate).
   * Counted against the client's address like authenticate, before anything is read.
   */
  async refresh(refreshToken: string, clientIp: string): Promise<Authentication> {
    await this.throttle.refreshing(clientIp);
    const session = await this.sessions.rotate(refreshToken);
    const trainer = await this.trainers.findById(session.trainerId);
    if (!trainer) throw new AppError('UNAUTHENTICATED', 'Invalid, expired or revoked refresh token');
    return this.answer(trainer, session);
  }

  /**
   * Ends the caller's session, or with `everywhere` every session of the caller: their refresh
   * tokens and access tokens stop working at once (UNAUTHENTICATED from the next request on).
   */
  async logout(auth: RequestAuth, everywhere: boolean): Promise<void> {
    const viewer = await auth.requireViewer();
    if (everywhere) await this.sessions.endAll(viewer.id);
    else await this.sessions.end(viewer.id, auth.sessionId());
  }

  private answer(trainer: Trainer, session: SessionTokens): Authentication {
    const { token, expiresAt } = this.tokens.issue(trainer.id, session.sessionId);
    return {
      token,
      tokenType: 'Bearer',
      expiresAt,
      refreshToken: session.refreshToken,
      refreshExpiresAt: session.refreshExpiresAt,
      trainer,
    };
  }

  /** Who is calling, for one request (see RequestAuth). */
  forRequest(authorization: string | undefined, onKnown?: (viewer: Trainer | null) => void): RequestAuth {
    return new RequestAuth(authorization, this.tokens, (id, sessionId) => this.trainers.findCaller(id, sessionId), onKnown);
  }
}
