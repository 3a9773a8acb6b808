import type { Services } from '../services';
import type { LiveConnection } from './live-connection';

/** What every door of live events holds its connections to. */
export const LIVE_LIMITS = {
  /** Open connections (WebSockets and event streams together) per client address. */
  connectionsPerAddress: 50,
  /** Open connections in all. */
  connections: 10_000,
  /** How often open connections are checked for expired tokens and ended sessions. */
  sessionCheckMs: 10_000,
} as const;

/**
 * The open connections of both doors of live events (WebSocket, Server-Sent Events), counted
 * together: the caps per client address and in all, a session's end told to its connections at
 * once (SessionEndings, from any instance), and the periodic check of every one of them for what
 * no notice reached.
 */
export class LiveConnections {
  private readonly open = new Set<LiveConnection>();
  private readonly perAddress = new Map<string, number>();
  private readonly stopListening: () => void;
  private readonly checkSessions: NodeJS.Timeout;
  /** Set on shutdown: no new connection is taken. */
  closing = false;

  constructor(
    services: Services,
    /** CORS_ORIGINS: when not empty, a browser page of any other origin may not open a connection. */
    private readonly origins: readonly string[],
    sessionCheckMs: number = LIVE_LIMITS.sessionCheckMs,
  ) {
    this.stopListening = services.sessionEndings.subscribe((ended) => {
      for (const connection of this.open) connection.endedBy(ended);
    });
    let checking = false;
    this.checkSessions = setInterval(() => {
      // While the database is slow, checks do not pile up.
      if (checking) return;
      const now = Date.now();
      checking = true;
      void Promise.all([...this.open].map((connection) => connection.check(now))).finally(() => (checking = false));
    }, sessionCheckMs);
    this.checkSessions.unref();
  }

  /**
   * Why a new connection from `ip`, sent by a page of `origin` (its Origin header), is refused now
   * (the HTTP status to answer), or undefined.
   */
  refusal(ip: string, origin: string | undefined): 403 | 429 | 503 | undefined {
    // A page of another origin is told so first: a 503 would have it try again, in vain.
    if (origin !== undefined && this.origins.length > 0 && !this.origins.includes(origin)) return 403;
    if (this.closing || this.open.size >= LIVE_LIMITS.connections) return 503;
    if ((this.perAddress.get(ip) ?? 0) >= LIVE_LIMITS.connectionsPerAddress) return 429;
    return undefined;
  }

  add(connection: LiveConnection): void {
    this.open.add(connection);
    this.perAddress.set(connection.ip, (this.perAddress.get(connection.ip) ?? 0) + 1);
  }

  /** A connection has closed: it no longer counts, and it ends its subscriptions' queues. */
  remove(connection: LiveConnection): void {
    connection.closedDown();
    if (!this.open.delete(connection)) return;
    const left = (this.perAddress.get(connection.ip) ?? 1) - 1;
    if (left > 0) this.perAddress.set(connection.ip, left);
    else this.perAddress.delete(connection.ip);
  }

  /** The open connections of one kind. */
  of<T extends LiveConnection>(kind: abstract new (...args: never[]) => T): T[] {
    return [...this.open].filter((connection): connection is T => connection instanceof kind);
  }

  /** Shutdown: nothing new is taken, and nothing more is checked. */
  stop(): void {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.checkSessions);
    this.stopListening();
  }
}
