import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { RequestAuth } from '../auth/request-auth';
import type { Services } from '../services';
import type { Loaders } from './loaders';

/** An event queue as a WebSocket connection keeps track of it. */
export interface TrackedQueue {
  readonly finished: boolean;
  return(): Promise<unknown>;
}

export interface GraphQLContext {
  readonly services: Services;
  readonly loaders: Loaders;
  /** Who is calling: the request's own RequestAuth, the same object REST handlers use. */
  readonly auth: RequestAuth;
  /**
   * Trainers this response speaks to as themselves besides the token's owner: the answers
   * to registerTrainer and authenticate show the new or signed-in trainer its own email.
   */
  readonly selfIds: Set<number>;
  /** The caller's address (behind a proxy, as TRUST_PROXY allows): login attempts are counted by it. */
  readonly clientIp: string;
  /** The HTTP request, for what is logged and measured about it (operation name, trainer id); none over WebSocket. */
  readonly request?: FastifyRequest;
  /**
   * Over WebSocket: the connection, which a subscriber too slow to read its events is dropped
   * from, and which ends every event queue its subscriptions opened when it closes.
   */
  readonly connection?: {
    drop(reason: string): void;
    track(queue: TrackedQueue): void;
    /** A promise while the socket has much unsent (resolved once it has sent most of it or closed), else undefined. */
    writable(): Promise<void> | undefined;
  };
  /** The request's logger (it carries the request id). */
  readonly log: FastifyBaseLogger;
}
