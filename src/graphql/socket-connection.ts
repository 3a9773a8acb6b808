import type { FastifyBaseLogger } from 'fastify';
import type { GraphQLError } from 'graphql';
import type { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { WebSocket } from 'ws';
import { AppError } from '../errors';
import type { Services } from '../services';
import { graphqlError } from './format-error';
import { LiveConnection, type Refusal } from './live-connection';
import { LIVE_LIMITS } from './live-connections';

/** The contract's WebSocket limits. */
export const WS_LIMITS = {
  subscriptionsPerConnection: 20,
  /** Subscribe messages one connection may send per 10 s (each may read the database and follow a Redis channel). */
  subscribesPer10s: 30,
  connectionsPerAddress: LIVE_LIMITS.connectionsPerAddress,
  messageBytes: 64 * 1024,
  /** Bytes a socket may have waiting to be sent before its reader counts as too slow and is dropped. */
  bufferedBytes: 1024 * 1024,
  /** Pings every so often; a socket that has not answered the last one by the next is closed. */
  pingMs: 15_000,
  /** How long a socket may wait before sending connection_init. */
  initWaitMs: 3_000,
  /** On shutdown, how long sockets get to finish their closing handshake before they are cut. */
  closeGraceMs: 2_000,
} as const;

/** graphql-ws close codes beyond the standard ones. */
const UNAUTHORIZED = 4401;
const SUBSCRIBER_ALREADY_EXISTS = 4409;
export const GOING_AWAY = 1001;
export const INTERNAL_ERROR = 1011;
const TRY_AGAIN_LATER = 1013;

/** What every connection of a server shares. */
export interface SocketServices {
  readonly services: Services;
  readonly log: FastifyBaseLogger;
  /** Subscribe messages per connection (WS_LIMITS.subscribesPer10s), keyed by SocketConnection.key. */
  readonly subscribes: RateLimiterMemory;
}

/**
 * One WebSocket connection's state and rules: who it speaks for (its token's session, checked at
 * each subscribe, when told that sessions ended, and at each periodic check; closed with 4401 once
 * its token expires), its subscriptions (at most WS_LIMITS.subscriptionsPerConnection live, one
 * per id, subscribe messages rate-limited), the pace of what it sends (a reader too slow is
 * dropped, a subscription with many events at once waits for the socket), its pings, and its end
 * (every event queue its subscriptions opened ends with it).
 */
export class SocketConnection extends LiveConnection {
  /**
   * The ids of its subscriptions, from their subscribe message until their execution has ended.
   * graphql-ws forgets an id as soon as the client completes it, even while that subscription is
   * still starting; this set does not, so a reused id cannot start a second copy.
   */
  private readonly subscriptions = new Set<string>();
  private readonly ping: NodeJS.Timeout;
  private answered = true;

  constructor(
    readonly socket: WebSocket,
    ip: string,
    /** Names the connection to the subscribe rate limiter. */
    readonly key: number,
    private readonly limits: SocketServices,
  ) {
    super(ip, limits);
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

  /** Ends the socket with the close code of `why` (4401, 1013 while the database is away, 1011). */
  refuse(why: Refusal, reason: string): void {
    this.close(why === 'unauthorized' ? UNAUTHORIZED : why === 'unavailable' ? TRY_AGAIN_LATER : INTERNAL_ERROR, reason);
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
      const limited = await this.limits.subscribes.consume(this.key).then(
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
    this.shared.log.info({ reason, trainerId: this.trainerId }, 'WebSocket subscriber dropped');
    this.socket.terminate();
  }

  /**
   * Undefined while the socket has at most half of WS_LIMITS.bufferedBytes unsent; otherwise a
   * promise that resolves once it has (or has closed). Subscriptions that have many events at
   * once (a deleted trainer's DELETED events) wait here instead of filling the socket's buffer
   * past the limit, which would drop their reader.
   */
  writable(): Promise<void> | undefined {
    return this.whenReady(() => this.socket.bufferedAmount <= WS_LIMITS.bufferedBytes / 2);
  }

  /** The socket has closed: its pings stop, and what every live connection does (LiveConnection). */
  override closedDown(): void {
    clearInterval(this.ping);
    super.closedDown();
  }
}
