import { isCleanText } from '../common/text';
import { AppError } from '../errors';
import type { Trainer } from '../trainers/trainer.entity';
import type { TrainerService } from '../trainers/trainer.service';
import { bearerToken, type TokenIssuer } from './jwt';
import type { LoginThrottle } from './login-throttle';
import type { PasswordHasher } from './password';

export interface Authentication {
  readonly token: string;
  readonly tokenType: 'Bearer';
  readonly expiresAt: Date;
  readonly trainer: Trainer;
}

const WRONG_CREDENTIALS = 'Wrong email or password';

const refused = (authorization: string | undefined): AppError =>
  new AppError(
    'UNAUTHENTICATED',
    authorization ? 'Invalid or expired token' : 'Authentication required: send Authorization: Bearer <token>',
  );

/** Who is calling: resolved lazily, at most once per request, from the Authorization header. */
export interface RequestAuth {
  /** The calling trainer, or null when the request carries no valid token of an existing trainer. */
  viewer(): Promise<Trainer | null>;
  /** The calling trainer, or UNAUTHENTICATED. */
  requireViewer(): Promise<Trainer>;
  /**
   * The trainer id of a valid token, or UNAUTHENTICATED, without asking the database: for
   * reads that check the trainer still exists in their own statement (or batch).
   */
  requireTokenId(): number;
}

export class AuthService {
  constructor(
    private readonly trainers: TrainerService,
    private readonly tokens: TokenIssuer,
    private readonly throttle: LoginThrottle,
    private readonly hasher: PasswordHasher,
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
    const matches = await this.hasher.verify(password, credentials?.passwordHash ?? (await this.hasher.decoyHash()));
    // No stored password has control characters; without this check scrypt would take
    // "secret\0" for "secret" (its HMAC pads keys with zero bytes).
    const trainer = credentials && matches && isCleanText(password) ? await this.trainers.findById(credentials.id) : null;
    if (!trainer) throw new AppError('UNAUTHENTICATED', WRONG_CREDENTIALS);
    await this.throttle.succeeded(email);
    const { token, expiresAt } = this.tokens.issue(trainer.id);
    return { token, tokenType: 'Bearer', expiresAt, trainer };
  }

  /**
   * The trainer id of a valid token, or UNAUTHENTICATED, without asking the database: for reads
   * that check the trainer still exists in their own statement (REST GET /trainer/:id).
   */
  requireTokenId(authorization: string | undefined): number {
    const token = bearerToken(authorization);
    const id = token === undefined ? undefined : this.tokens.verify(token);
    if (id === undefined) throw refused(authorization);
    return id;
  }

  /**
   * @param findTrainer how to look the token's trainer up: the request's batching loader,
   * so that the viewer also answers `me` and its own `Creature.trainer` without another query.
   */
  forRequest(authorization: string | undefined, findTrainer: (id: number) => Promise<Trainer | null>): RequestAuth {
    let resolved: Promise<Trainer | null> | undefined;
    const viewer = (): Promise<Trainer | null> => {
      if (resolved) return resolved;
      const token = bearerToken(authorization);
      const id = token === undefined ? undefined : this.tokens.verify(token);
      resolved = id === undefined ? Promise.resolve(null) : findTrainer(id);
      return resolved;
    };
    return {
      viewer,
      async requireViewer() {
        const trainer = await viewer();
        if (trainer) return trainer;
        throw refused(authorization);
      },
      requireTokenId: () => this.requireTokenId(authorization),
    };
  }
}
