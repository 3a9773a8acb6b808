import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';

/**
 * Sessions that just ended: one (`sessionId`), every one of a trainer up to an id (`upTo`, the
 * oldest beyond the cap), or every one of a trainer (neither), but `except` (the caller's own,
 * when a trainer ends its other sessions).
 */
export interface SessionsEnded {
  readonly trainerId: number;
  readonly sessionId?: number;
  readonly upTo?: number;
  readonly except?: number;
}

/** Whether a session of `trainerId` numbered `sessionId` is among those ended. */
export function isEnded(ended: SessionsEnded, trainerId: number, sessionId: number): boolean {
  if (ended.trainerId !== trainerId || ended.except === sessionId) return false;
  if (ended.sessionId !== undefined) return ended.sessionId === sessionId;
  if (ended.upTo !== undefined) return sessionId <= ended.upTo;
  return true;
}

type Listener = (ended: SessionsEnded) => void;

const CHANNEL = 'registry:sessions-ended';

/**
 * Tells whoever holds something on a session's behalf (an open WebSocket, mainly) that sessions
 * ended, in this process at once and, with REDIS_URL, on every other instance within Redis's
 * pub/sub delay. The database stays the authority: a notice lost while Redis is away is caught by
 * the next check against it (the WebSocket sweep), only later.
 */
export class SessionEndings {
  private readonly listeners = new Set<Listener>();
  private relay: RedisSessionEndings | undefined;

  /** Calls `listener` for every ending from now on; returns what stops it. */
  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Shares endings with the other instances from now on. */
  relayThrough(relay: RedisSessionEndings): void {
    this.relay = relay;
  }

  /** Sessions ended here: this process's listeners, then the other instances'. */
  publish(ended: SessionsEnded): void {
    this.deliver(ended);
    this.relay?.publish(ended);
  }

  /** Sessions ended on another instance. */
  deliver(ended: SessionsEnded): void {
    for (const listener of this.listeners) listener(ended);
  }
}

export interface RelayLog {
  warn(details: object, message: string): void;
}

const optionalId = (value: unknown): boolean => value === undefined || Number.isSafeInteger(value);

/** Session endings over one Redis pub/sub channel that every instance follows from its start. */
export class RedisSessionEndings {
  private readonly origin = randomUUID();

  constructor(
    private readonly publisher: Redis,
    subscriber: Redis,
    deliver: (ended: SessionsEnded) => void,
    private readonly log: RelayLog,
  ) {
    subscriber.subscribe(CHANNEL).catch((error: unknown) => log.warn({ err: error }, 'cannot follow session endings through Redis yet'));
    subscriber.on('message', (channel: string, text: string) => {
      if (channel !== CHANNEL) return;
      let envelope: { origin?: unknown; ended?: Partial<Record<keyof SessionsEnded, unknown>> };
      try {
        envelope = JSON.parse(text) as typeof envelope;
      } catch {
        return;
      }
      const ended = envelope?.ended;
      if (envelope?.origin === this.origin || typeof ended !== 'object' || ended === null) return;
      if (!Number.isSafeInteger(ended.trainerId) || !optionalId(ended.sessionId) || !optionalId(ended.upTo) || !optionalId(ended.except))
        return;
      deliver(ended as SessionsEnded);
    });
  }

  publish(ended: SessionsEnded): void {
    this.publisher
      .publish(CHANNEL, JSON.stringify({ origin: this.origin, ended }))
      .catch((error: unknown) => this.log.warn({ err: error, trainerId: ended.trainerId }, 'session ending not shared: Redis unavailable'));
  }
}
