import type { FastifyBaseLogger } from 'fastify';
import { GraphQLError } from 'graphql';
import type { RequestAuth } from '../auth/request-auth';
import { isEnded, type SessionsEnded } from '../auth/session-endings';
import { toAppError } from '../error-mapping';
import type { Services } from '../services';
import type { GraphQLContext, TrackedQueue } from './context';
import { graphqlError } from './format-error';
import { Loaders } from './loaders';

/** How often a paced subscription looks again whether its connection has sent enough. */
const PACE_POLL_MS = 10;

/** setTimeout's longest delay; a later expiry is caught by the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why a connection is ended by its caller's rules (each transport says it its own way). */
export type Refusal = 'unauthorized' | 'unavailable' | 'internal';

/** The session a connection's token names, as it was found when the connection opened. */
interface Session {
  readonly auth: RequestAuth;
  readonly trainerId: number;
  readonly sessionId: number;
  readonly expiresAtMs: number;
}

/**
 * A connection that carries live events (a WebSocket, a Server-Sent Events response): who it
 * speaks for (its token's session, checked when it opens, at each subscription, when told that
 * sessions ended, and at each periodic check; ended once its token expires) and the event queues
 * of its subscriptions (all ended with it). How it ends, how it paces what it sends and how a
 * reader too slow is dropped are its transport's.
 */
export abstract class LiveConnection implements NonNullable<GraphQLContext['connection']> {
  /** Every event queue its subscriptions opened: all are ended when it closes. */
  private readonly queues = new Set<TrackedQueue>();
  protected closed = false;
  /** Who it speaks for, once open. */
  private session: Session | undefined;
  /** Ends the connection when its token expires. */
  private expiry: NodeJS.Timeout | undefined;

  constructor(
    readonly ip: string,
    protected readonly shared: { readonly services: Services; readonly log: FastifyBaseLogger },
  ) {}

  /** Ends the connection for `why`, telling the client `reason` as its transport can. */
  abstract refuse(why: Refusal, reason: string): void;
  abstract drop(reason: string): void;
  abstract writable(): Promise<void> | undefined;

  /** Undefined when `ready` (or closed); otherwise a promise that resolves once it is. */
  protected whenReady(ready: () => boolean): Promise<void> | undefined {
    const done = () => this.closed || ready();
    if (done()) return undefined;
    return new Promise((resolve) => {
      const timer = setInterval(() => {
        if (!done()) return;
        clearInterval(timer);
        resolve();
      }, PACE_POLL_MS);
    });
  }

  /** The context a subscription of this open connection runs in (both doors). */
  contextFor(log: FastifyBaseLogger): GraphQLContext {
    const auth = this.session!.auth;
    return {
      services: this.shared.services,
      loaders: new Loaders(this.shared.services, auth),
      auth,
      selfIds: new Set(),
      clientIp: this.ip,
      log,
      connection: this,
    };
  }

  /** The caller this connection speaks for, once open. */
  get auth(): RequestAuth | undefined {
    return this.session?.auth;
  }

  /** Whom it speaks for, for the log. */
  protected get trainerId(): number | undefined {
    return this.session?.trainerId;
  }

  /**
   * Takes the token of `authorization` (`Bearer <token>`); false, with the connection refused
   * (unauthorized, unavailable while the database is away, internal on an unexpected error), when
   * it is not accepted.
   */
  async open(authorization: unknown): Promise<boolean> {
    const auth = this.shared.services.auth.forRequest(typeof authorization === 'string' ? authorization : undefined);
    let claims;
    let viewer;
    try {
      claims = auth.tokenClaims();
      viewer = await auth.viewer();
    } catch (error) {
      const code = toAppError(error).code;
      if (code === 'UNAUTHENTICATED') this.refuse('unauthorized', 'Unauthorized');
      // The database is away: try again later, not "unauthorized".
      else if (code === 'SERVICE_UNAVAILABLE') this.refuse('unavailable', 'Service unavailable');
      else {
        this.shared.log.error({ err: error }, 'live events connection refused by an unexpected error');
        this.refuse('internal', 'Internal server error');
      }
      return false;
    }
    if (!viewer) {
      this.refuse('unauthorized', 'Unauthorized');
      return false;
    }
    this.session = { auth, trainerId: claims.trainerId, sessionId: claims.sessionId, expiresAtMs: claims.expiresAtMs };
    const untilExpiry = claims.expiresAtMs - Date.now();
    if (untilExpiry <= MAX_TIMER_MS) {
      this.expiry = setTimeout(() => this.refuse('unauthorized', 'Token expired'), Math.max(0, untilExpiry));
      this.expiry.unref();
    }
    return true;
  }

  /** An event queue one of its subscriptions opened: ended with the connection. */
  track(queue: TrackedQueue): void {
    if (this.closed) {
      void queue.return();
      return;
    }
    // Those that have ended are forgotten: a long-lived connection that subscribes again and again holds only its live ones.
    for (const known of this.queues) if (known.finished) this.queues.delete(known);
    this.queues.add(queue);
  }

  /** Sessions ended (here or on another instance): ends the connection (unauthorized) when its own is among them. */
  endedBy(ended: SessionsEnded): void {
    if (this.session && isEnded(ended, this.session.trainerId, this.session.sessionId)) this.refuse('unauthorized', 'Session ended');
  }

  /**
   * The periodic check, for what no notice reached (a session ended while Redis was away, rows
   * deleted by hand, a token expiring past the longest timer): ends the connection (unauthorized)
   * when its token expired by `now` or the database says its session ended; a database that does
   * not answer leaves it open until it can tell.
   */
  async check(now: number): Promise<void> {
    const session = this.session;
    if (!session) return;
    if (session.expiresAtMs <= now) this.refuse('unauthorized', 'Token expired');
    const caller = await this.shared.services.trainers.findCaller(session.trainerId, session.sessionId).catch(() => undefined);
    if (caller === null) this.refuse('unauthorized', 'Session ended');
  }

  /** It has closed: its timer stops and every event queue of its subscriptions ends. */
  closedDown(): void {
    clearTimeout(this.expiry);
    this.closed = true;
    for (const queue of this.queues) void queue.return();
    this.queues.clear();
  }

  /**
   * Why a subscription must be refused because the token expired or the session ended, with the
   * connection ended (unauthorized); undefined while both hold. Asked of the database at each
   * subscription, not of what was known when the connection opened.
   */
  protected async sessionEnded(): Promise<GraphQLError | undefined> {
    const unauthorized = (reason: string) => {
      this.refuse('unauthorized', reason);
      return graphqlError('UNAUTHENTICATED', reason);
    };
    const session = this.session;
    if (session === undefined || session.expiresAtMs <= Date.now()) return unauthorized('Token expired');
    let caller;
    try {
      caller = await this.shared.services.trainers.findCaller(session.trainerId, session.sessionId);
    } catch (error) {
      return new GraphQLError('The session could not be checked', { originalError: toAppError(error) });
    }
    return caller ? undefined : unauthorized('Session ended');
  }
}
