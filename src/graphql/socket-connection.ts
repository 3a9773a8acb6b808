import type { FastifyBaseLogger } from 'fastify';
import { GraphQLError } from 'graphql';
import type { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { WebSocket } from 'ws';
import type { RequestAuth } from '../auth/request-auth';
import { isEnded, type SessionsEnded } from '../auth/session-endings';
import { toAppError } from '../error-mapping';
import { AppError } from '../errors';
import type { Services } from '../services';
import type { GraphQLContext, TrackedQueue } from './context';
import { graphqlError } from './format-error';

/** The contract's WebSocket limits. */
export const WS_LIMITS = {
  subscriptionsPerConnection: 20,
  /** Subscribe messages one connection may send per 10 s (each may read the database and follow a Redis channel). */
  subscribesPer10s: 30,
  connectionsPerAddress: 50,
  messageBytes: 64 * 1024,
  /** Bytes a socket may have waiting to be sent before its reader counts as too slow and is dropped. */
  bufferedBytes: 1024 * 1024,
  /** Pings every so often; a socket that has not answered the last one by the next is closed. */
  pingMs: 15_000,
  /** How often open connections are checked for expired tokens and ended sessions. */
  sessionCheckMs: 10_000,
  /** Open sockets in all, and how long one may wait before sending connection_init. */
  connections: 10_000,
  initWaitMs: 3_000,
  /** On shutdown, how long sockets get to finish their closing handshake before they are cut. */
  closeGraceMs: 2_000,
} as const;

/** How often a paced subscription looks again whether its socket has sent enough. */
const PACE_POLL_MS = 10;

/** graphql-ws close codes beyond the standard ones. */
const UNAUTHORIZED = 4401;
const SUBSCRIBER_ALREADY_EXISTS = 4409;
export const GOING_AWAY = 1001;
export const INTERNAL_ERROR = 1011;
const TRY_AGAIN_LATER = 1013;

/** setTimeout's longest delay; a later expiry is caught by the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What every connection of a server shares. */
export interface SocketServices {
  readonly services: Services;
  readonly log: FastifyBaseLogger;
  /** Subscribe messages per connection (WS_LIMITS.subscribesPer10s), keyed by SocketConnection.key. */
  readonly subscribes: RateLimiterMemory;
}

/** The session a connection's token names, as connection_init found it. */
interface Session {
  readonly auth: RequestAuth;
  readonly trainerId: number;
  readonly sessionId: number;
  readonly expiresAtMs: number;
}

/**
 * One WebSocket connection's state and rules: who it speaks for (its token's session, checked at
 * each subscribe, when told that sessions ended, and at each periodic check; closed with 4401 once
 * its token expires), its subscriptions (at most WS_LIMITS.subscriptionsPerConnection live, one
 * per id, subscribe messages rate-limited), the pace of what it sends (a reader too slow is
 * dropped, a subscription with many events at once waits for the socket), its pings, and its end
 * (every event queue its subscriptions opened ends with it).
 */
export class SocketConnection implements NonNullable<GraphQLContext['connection']> {
  /** Every event queue its subscriptions opened: all are ended when the socket closes. */
  private readonly queues = new Set<TrackedQueue>();
  /**
   * The ids of its subscriptions, from their subscribe message until their execution has ended.
   * graphql-ws forgets an id as soon as the client completes it, even while that subscription is
   * still starting; this set does not, so a reused id cannot start a second copy.
   */
  private readonly subscriptions = new Set<string>();
  private closed = false;
  /** Who it speaks for, from connection_init on. */
  private session: Session | undefined;
  /** Closes the socket (4401) when its token expires. */
  private expiry: NodeJS.Timeout | undefined;
  private readonly ping: NodeJS.Timeout;
  private answered = true;

  constructor(
    readonly socket: WebSocket,
    readonly ip: string,
    /** Names the connection to the subscribe rate limiter. */
    readonly key: number,
    private readonly shared: SocketServices,
  ) {
    socket.on('error', () => socket.terminate());
    this.ping = setInterval(() => {
      if (!this.answered) {
        socket.terminate();
        return;
      }
      this.answered = false;
      socket.ping();
    }, WS_LIMITS.pingMs);
    socket.on('pong', () => (this.answered = true));
  }

  /** The caller this connection speaks for, once open. */
  get auth(): RequestAuth | undefined {
    return this.session?.auth;
  }

  /** Closes the socket with `code` unless it is closing already. */
  close(code: number, reason: string): void {
    if (this.socket.readyState === this.socket.OPEN || this.socket.readyState === this.socket.CONNECTING) this.socket.close(code, reason);
  }

  /** Sends a message of the protocol; a reader that does not keep up is dropped, not buffered for. */
  send(data: string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    if (this.socket.bufferedAmount > WS_LIMITS.bufferedBytes) {
      this.socket.terminate();
      return;
    }
    this.socket.send(data);
  }

  /**
   * connection_init: takes the token of `authorization`; false (the socket closed: 4401
   * unauthorized, 1013 while the database is away, 1011 on an unexpected error) when it is refused.
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
      if (code === 'UNAUTHENTICATED') this.close(UNAUTHORIZED, 'Unauthorized');
      // The database is away: try again later, not "unauthorized".
      else if (code === 'SERVICE_UNAVAILABLE') this.close(TRY_AGAIN_LATER, 'Service unavailable');
      else {
        this.shared.log.error({ err: error }, 'WebSocket connection refused by an unexpected error');
        this.close(INTERNAL_ERROR, 'Internal server error');
      }
      return false;
    }
    if (!viewer) {
      this.close(UNAUTHORIZED, 'Unauthorized');
      return false;
    }
    this.session = { auth, trainerId: claims.trainerId, sessionId: claims.sessionId, expiresAtMs: claims.expiresAtMs };
    const untilExpiry = claims.expiresAtMs - Date.now();
    if (untilExpiry <= MAX_TIMER_MS) {
      this.expiry = setTimeout(() => this.close(UNAUTHORIZED, 'Token expired'), Math.max(0, untilExpiry));
      this.expiry.unref();
    }
    return true;
  }

  /**
   * A subscribe message with id `id`: the errors that refuse it, or undefined when it may go on to
   * the pipeline, its id then held (`release` it unless it starts). A reused live id
   * closes the socket (4409); every message counts against the rate limit, refused ones too.
   */
  async admit(id: string): Promise<readonly GraphQLError[] | undefined> {
    // One live subscription per id: a subscribe that reuses the id of one still starting or
    // running is what the protocol answers with 4409 when graphql-ws can tell.
    if (this.subscriptions.has(id)) {
      this.close(SUBSCRIBER_ALREADY_EXISTS, `Subscriber for ${id} already exists`);
      return [graphqlError('BAD_USER_INPUT', `Subscriber for ${id} already exists`)];
    }
    // Reserved at once, before anything is awaited: the next message already sees it.
    const full = this.subscriptions.size >= WS_LIMITS.subscriptionsPerConnection;
    if (!full) this.subscriptions.add(id);
    let admitted = false;
    try {
      // Every subscribe message counts, whatever becomes of it.
      const limited = await this.shared.subscribes.consume(this.key).then(
        () => undefined,
        (refused: RateLimiterRes) => refused,
      );
      if (limited) {
        const retryAfter = Math.max(1, Math.ceil(limited.msBeforeNext / 1000));
        const error = new AppError(
          'RATE_LIMITED',
          `Too many subscriptions started on this connection; try again in ${retryAfter} s`,
          [],
          retryAfter,
        );
        return [graphqlError(error.code, error.message, { originalError: error })];
      }
      if (full) {
        return [graphqlError('BAD_USER_INPUT', `At most ${WS_LIMITS.subscriptionsPerConnection} subscriptions per connection`)];
      }
      const ended = await this.sessionEnded();
      if (ended) return [ended];
      admitted = true;
      return undefined;
    } finally {
      if (!admitted) this.subscriptions.delete(id);
    }
  }

  /** The subscription `id` has ended, or was refused after `admit` (graphql-ws then calls no onComplete). */
  release(id: string): void {
    this.subscriptions.delete(id);
  }

  /** Drops the connection of a subscriber too slow to read its events. */
  drop(reason: string): void {
    this.shared.log.info({ reason, trainerId: this.session?.trainerId }, 'WebSocket subscriber dropped');
    this.socket.terminate();
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

  /**
   * Undefined while the socket has at most half of WS_LIMITS.bufferedBytes unsent; otherwise a
   * promise that resolves once it has (or has closed). Subscriptions that have many events at
   * once (a deleted trainer's DELETED events) wait here instead of filling the socket's buffer
   * past the limit, which would drop their reader.
   */
  writable(): Promise<void> | undefined {
    const ready = () => this.closed || this.socket.bufferedAmount <= WS_LIMITS.bufferedBytes / 2;
    if (ready()) return undefined;
    return new Promise((resolve) => {
      const timer = setInterval(() => {
        if (!ready()) return;
        clearInterval(timer);
        resolve();
      }, PACE_POLL_MS);
    });
  }

  /** Sessions ended (here or on another instance): closes the socket (4401) when its own is among them. */
  endedBy(ended: SessionsEnded): void {
    if (this.session && isEnded(ended, this.session.trainerId, this.session.sessionId)) this.close(UNAUTHORIZED, 'Session ended');
  }

  /**
   * The periodic check, for what no notice reached (a session ended while Redis was away, rows
   * deleted by hand, a token expiring past the longest timer): closes the socket (4401) when its
   * token expired by `now` or the database says its session ended; a database that does not
   * answer leaves it open until it can tell.
   */
  async check(now: number): Promise<void> {
    const session = this.session;
    if (!session) return;
    if (session.expiresAtMs <= now) this.close(UNAUTHORIZED, 'Token expired');
    const caller = await this.shared.services.trainers.findCaller(session.trainerId, session.sessionId).catch(() => undefined);
    if (caller === null) this.close(UNAUTHORIZED, 'Session ended');
  }

  /** The socket has closed: its timers stop and every event queue of its subscriptions ends. */
  closedDown(): void {
    clearInterval(this.ping);
    clearTimeout(this.expiry);
    this.closed = true;
    for (const queue of this.queues) void queue.return();
    this.queues.clear();
  }

  /**
   * Why a subscribe must be refused because the socket's token expired or its session ended, with
   * the socket closed (4401); undefined while both hold. Asked of the database at each subscribe,
   * not of what was known when the socket opened.
   */
  private async sessionEnded(): Promise<GraphQLError | undefined> {
    const unauthorized = (reason: string) => {
      this.close(UNAUTHORIZED, reason);
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
