import type { FastifyInstance } from 'fastify';
import { WAITING_LIMIT } from '../db/data-source';
import type { StatementLoad } from '../db/sql';
import { AppError } from '../errors';

/** Seconds a client refused for a full queue is told to wait. */
const FULL_RETRY_AFTER_S = 1;

/**
 * The door of the API's scopes (REST and GraphQL over HTTP): while every database connection has
 * a statement, a request waits for its turn here (StatementLoad.turn) once parsed, before its
 * handler runs (no GraphQL context, no resolver, no rows), instead of waiting in the pool's queue
 * with all of that alive. Under load the requests in progress then stay about as many as the
 * database can serve, and what they hold dies young: with 50 clients asking for nested pages,
 * letting all of them in kept each page's objects alive across several young-generation
 * collections, which copied and promoted them (bench/README.md, "Admission"). Beyond
 * WAITING_LIMIT waiting, SERVICE_UNAVAILABLE (503, Retry-After), as the pool's own queue answers
 * when it is full. SQLite is never busy, so nothing waits there.
 */
export class Admission {
  constructor(
    private readonly load: StatementLoad,
    private readonly limit = WAITING_LIMIT,
  ) {}

  /** Requests waiting for their turn (the `http_requests_waiting` metric). */
  get queued(): number {
    return this.load.queued;
  }

  /**
   * Undefined when the request may go on at once; else a promise kept when it may (true), or when
   * `gone` is aborted first (false: it left the queue).
   */
  enter(gone?: AbortSignal): Promise<boolean> | undefined {
    if (this.load.wouldWait && this.load.queued >= this.limit) {
      throw new AppError('SERVICE_UNAVAILABLE', 'The service is at capacity: try again shortly', undefined, FULL_RETRY_AFTER_S);
    }
    return this.load.turn(gone);
  }

  /**
   * The hooks of a scope: each request waits its turn once parsed, and its answer lets the next
   * in. A request whose client closes its connection while it waits leaves the queue at once and
   * is never run (nobody would read the answer, and a client that gave up may already be sending
   * it again): it no longer counts against the limit, and takes no turn.
   */
  guard(scope: FastifyInstance): void {
    scope.addHook('preHandler', (request, reply, done) => {
      if (!this.load.wouldWait) {
        done();
        return;
      }
      const socket = request.raw.socket;
      const gone = new AbortController();
      const closed = () => gone.abort();
      socket.once('close', closed);
      let turn: Promise<boolean> | undefined;
      try {
        turn = this.enter(gone.signal);
      } catch (error) {
        socket.removeListener('close', closed);
        done(error as Error);
        return;
      }
      if (!turn) {
        socket.removeListener('close', closed);
        done();
        return;
      }
      void turn.then((admitted) => {
        socket.removeListener('close', closed);
        if (admitted && !socket.destroyed) {
          done();
          return;
        }
        // Fastify sends nothing and runs no later step of a hijacked request.
        reply.hijack();
        // A turn given to a client gone at that moment passes on.
        if (admitted) this.load.pump();
      });
    });
    // Each answer also weighs the next: a statement's answer is not the only sign of a free turn.
    scope.addHook('onResponse', (_request, _reply, done) => {
      this.load.pump();
      done();
    });
  }
}
