import type { FastifyInstance } from 'fastify';
import { WAITING_LIMIT } from '../db/data-source';
import { AppError } from '../errors';

/** What admission weighs: whether the database has a connection free (Sql.load). */
export interface DatabaseLoad {
  readonly busy: boolean;
  onSettled(listener: () => void): void;
}

/** Seconds a client refused for a full queue is told to wait. */
const FULL_RETRY_AFTER_S = 1;

/**
 * The door of the API's scopes (REST and GraphQL over HTTP): while every database connection has
 * a statement, a request that arrives waits here, in arrival order, before anything is done for
 * it (no GraphQL context, no resolver, no rows), instead of waiting in the pool's queue with all
 * of that alive. Under load the requests in progress then stay about as many as the database can
 * serve, and what they hold dies young: with 50 clients asking for nested pages, letting all of
 * them in kept each page's objects alive across several young-generation collections, which
 * copied and promoted them (bench/README.md, "Admission").
 *
 * A waiting request is let in when a statement is answered or a request is answered and a
 * connection is free, one at a time: the next is weighed on the next turn of the event loop, once
 * the one let in has sent its first statement. A request that sends none (one waiting for a
 * password hash, say) therefore holds no place. SQLite is never busy, so nothing waits there.
 * Beyond WAITING_LIMIT waiting requests, SERVICE_UNAVAILABLE (503, Retry-After), as the pool's
 * own queue answers when it is full.
 */
export class Admission {
  private readonly waiting: (() => void)[] = [];
  private pumpScheduled = false;

  constructor(
    private readonly database: DatabaseLoad,
    private readonly limit = WAITING_LIMIT,
  ) {
    database.onSettled(() => this.pump());
  }

  /** Requests waiting to be let in (the `http_requests_waiting` metric). */
  get queued(): number {
    return this.waiting.length;
  }

  /** Undefined when the request may go on at once; else a promise kept when it may. */
  enter(): Promise<void> | undefined {
    if (this.waiting.length === 0 && !this.database.busy) return undefined;
    if (this.waiting.length >= this.limit) {
      throw new AppError('SERVICE_UNAVAILABLE', 'The service is at capacity: try again shortly', undefined, FULL_RETRY_AFTER_S);
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Lets the first waiting request in if a connection is free, and weighs the next on the next turn. */
  pump(): void {
    if (this.waiting.length === 0 || this.database.busy) return;
    this.waiting.shift()?.();
    if (this.waiting.length > 0 && !this.pumpScheduled) {
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
  }

  /** The hooks of a scope: each request waits its turn once parsed, and its answer lets the next in. */
  guard(scope: FastifyInstance): void {
    scope.addHook('preHandler', (_request, _reply, done) => {
      let turn: Promise<void> | undefined;
      try {
        turn = this.enter();
      } catch (error) {
        done(error as Error);
        return;
      }
      if (turn) void turn.then(() => done());
      else done();
    });
    scope.addHook('onResponse', (_request, _reply, done) => {
      this.pump();
      done();
    });
  }
}
