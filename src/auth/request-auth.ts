import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import type { Trainer } from '../trainers/trainer.entity';
import { bearerToken, type TokenClaims, type TokenIssuer } from './jwt';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling (set by the API scopes' onRequest hook, attachRequestAuth). */
    auth: RequestAuth;
  }
}

/** Why a request has no caller: no header, a header of another scheme (Basic...), or a token refused. */
const refused = (authorization: string | undefined): AppError =>
  new AppError(
    'UNAUTHENTICATED',
    !authorization
      ? 'Authentication required: send Authorization: Bearer <token>'
      : /^\s*Bearer\s/i.test(authorization)
        ? 'Invalid or expired token'
        : 'Only Bearer tokens are taken: send Authorization: Bearer <token>',
  );

/**
 * Who is calling: the one way both transports know the caller. One per request, built by the
 * REST and GraphQL scopes' onRequest hook (`request.auth`; GraphQL's context hands on the same
 * object), asked the same way by resolvers, route hooks and handlers:
 *
 * - `tokenId()`: the token's trainer id, checked by signature only (no database), else
 *   UNAUTHENTICATED. For refusing anonymous callers before anything else is read.
 * - `viewer()` / `requireViewer()`: the calling trainer, read once per request through the
 *   trainers' merged reads, so it shares a statement with every other trainer read of the same
 *   turn. A valid token whose trainer no longer exists, or whose session (`sid`) has ended, is
 *   no caller.
 * - `sessionId()`: the token's session, for logout.
 * - `alongside(read)`: runs `read` and the caller check in the same turn (one statement when
 *   `read` is a trainer read); UNAUTHENTICATED wins over whatever `read` answers.
 */
export class RequestAuth {
  private resolved: Promise<Trainer | null> | undefined;
  private knownViewer: Trainer | null | undefined;

  constructor(
    private readonly authorization: string | undefined,
    private readonly tokens: TokenIssuer,
    private readonly findCaller: (id: number, sessionId: number) => Promise<Trainer | null>,
    private readonly onKnown: (viewer: Trainer | null) => void = () => undefined,
  ) {}

  /** The claims of a valid Bearer token, or undefined. */
  private claims(): TokenClaims | undefined {
    const token = bearerToken(this.authorization);
    return token === undefined ? undefined : this.tokens.verify(token);
  }

  tokenId(): number {
    const claims = this.claims();
    if (claims === undefined) throw refused(this.authorization);
    return claims.trainerId;
  }

  /** The token's claims (trainer, session, expiry), or UNAUTHENTICATED. */
  tokenClaims(): TokenClaims {
    const claims = this.claims();
    if (claims === undefined) throw refused(this.authorization);
    return claims;
  }

  sessionId(): number {
    const claims = this.claims();
    if (claims === undefined) throw refused(this.authorization);
    return claims.sessionId;
  }

  viewer(): Promise<Trainer | null> {
    if (this.resolved) return this.resolved;
    const claims = this.claims();
    this.resolved = (claims === undefined ? Promise.resolve(null) : this.findCaller(claims.trainerId, claims.sessionId)).then((viewer) => {
      this.knownViewer = viewer;
      this.onKnown(viewer);
      return viewer;
    });
    return this.resolved;
  }

  async requireViewer(): Promise<Trainer> {
    const viewer = await this.viewer();
    if (viewer) return viewer;
    throw refused(this.authorization);
  }

  /** The caller once resolved (undefined before): lets per-request caches reuse its row. */
  get known(): Trainer | null | undefined {
    return this.knownViewer;
  }

  async alongside<T>(read: (viewerId: number) => Promise<T>): Promise<T> {
    const id = this.tokenId();
    // Known already to be nobody (a session that has ended): no read for it.
    if (this.knownViewer === null) throw refused(this.authorization);
    const [viewer, result] = await Promise.allSettled([this.requireViewer(), read(id)]);
    if (viewer.status === 'rejected') throw viewer.reason;
    if (result.status === 'rejected') throw result.reason;
    return result.value;
  }
}

/** The onRequest hook of the API scopes: `request.auth` for this request, and its trainer id for the request's log line. */
export function attachRequestAuth(
  forRequest: (authorization: string | undefined, onKnown: (viewer: Trainer | null) => void) => RequestAuth,
) {
  return async (request: FastifyRequest) => {
    request.auth = forRequest(request.headers.authorization, (viewer) => {
      request.trainerId = viewer?.id ?? null;
    });
  };
}
