import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import { WAITING_LIMIT } from '../db/data-source';
import type { StatementLoad } from '../db/sql';
import { AppError } from '../errors';

/** Seconds a client refused for a full queue is told to wait. */
const FULL_RETRY_AFTER_S = 1;

/** What to run when a connection closes, for its requests in progress (see onClose). */
const closings = new WeakMap<Socket, Set<() => void>>();

/**
 * Runs `then` once `socket` closes, unless the returned function is called first. A connection
 * has one 'close' listener however many of its requests are in progress: a client pipelining
 * dozens of requests on one connection would otherwise add one each (and Node warns past 10).
 */
function onClose(socket: Socket, then: () => void): () => void {
  let waiting = closings.get(socket);
  if (!waiting) {
    const callbacks = new Set<() => void>();
    waiting = callbacks;
    closings.set(socket, callbacks);
    socket.once('close', () => {
      closings.delete(socket);
      for (const callback of callbacks) callback();
    });
  }
  const registered = waiting;
  registered.add(then);
  return () => registered.delete(then);
}

/** A request waiting for its turn: how much it weighs, and how to let it in. */
interface Waiting {
  readonly weight: number;
  readonly admit: () => void;
}

export interface AdmissionOptions {
  /** How many requests may wait; beyond, SERVICE_UNAVAILABLE. */
  readonly waitingLimit?: number;
  /**
   * The weight of the requests let in and not yet answered, at most (one that weighs more still
   * goes in alone). Ignored when the load has no connections to count (SQLite).
   */
  readonly budget?: number;
}

/**
 * The door of the API's scopes (REST and GraphQL over HTTP): a request waits for its turn here
 * once parsed, before its handler runs (no GraphQL context, no resolver, no rows), while
 * - every database connection has a statement (StatementLoad), or
 * - the requests already let in and not yet answered weigh the budget: a request weighs what its
 *   scope says (GraphQL: the cost its document was last let through at; a REST page: its limit).
 * Waiting here instead of in the pool's queue with everything alive keeps the work in progress
 * about as large as the database and the process can serve at once, and what it holds dies young:
 * with 50 clients asking for nested pages, letting all of them in kept each page's objects alive
 * across several young-generation collections, which copied and promoted them, and garbage
 * collection then took as much CPU as the pages (bench/README.md, "Admission"). Requests are let
 * in in arrival order: the first waiting when a request leaves or a statement ends, then one a
 * turn of the event loop while more fit (the one let in sends its first statement before the
 * next is weighed). Beyond the waiting limit, SERVICE_UNAVAILABLE (503, Retry-After),
 * as the pool's own queue answers when it is full. SQLite is never busy and has no budget, so
 * nothing waits there.
 */
export class Admission {
  private readonly waiting: Waiting[] = [];
  /** The weight of the requests let in and not yet answered. */
  private inside = 0;
  private pumpScheduled = false;
  private readonly waitingLimit: number;
  private readonly budget: number;

  constructor(
    private readonly load: StatementLoad,
    { waitingLimit = WAITING_LIMIT, budget = Infinity }: AdmissionOptions = {},
  ) {
    this.waitingLimit = waitingLimit;
    this.budget = load.bounded ? budget : Infinity;
    load.onSettled(() => this.pump());
  }

  /** Requests waiting for their turn (the `http_requests_waiting` metric). */
  get queued(): number {
    return this.waiting.length;
  }

  /** Whether a request of `weight` fits beside those let in (alone, it always does). */
  private fits(weight: number): boolean {
    return this.inside === 0 || this.inside + weight <= this.budget;
  }

  /**
   * Lets a request of `weight` in: undefined when it may go on at once; else a promise kept when
   * it may (true), or when `gone` is aborted first (false: it left the queue, and was never let
   * in). A request let in is counted until `leave(weight)`.
   */
  enter(weight = 1, gone?: AbortSignal): Promise<boolean> | undefined {
    if (this.enteredAtOnce(weight)) return undefined;
    if (this.waiting.length >= this.waitingLimit) {
      throw new AppError('SERVICE_UNAVAILABLE', 'The service is at capacity: try again shortly', undefined, FULL_RETRY_AFTER_S);
    }
    return new Promise<boolean>((resolve) => {
      const waiting: Waiting = {
        weight,
        admit: () => {
          gone?.removeEventListener('abort', leaveQueue);
          this.inside += weight;
          resolve(true);
        },
      };
      const leaveQueue = () => {
        const at = this.waiting.indexOf(waiting);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
        // The one behind may fit where this one did not.
        if (at === 0) this.pump();
      };
      gone?.addEventListener('abort', leaveQueue, { once: true });
      this.waiting.push(waiting);
    });
  }

  /** Lets a request of `weight` in if nobody waits, a connection is free and it fits (then counted); whether it did. */
  private enteredAtOnce(weight: number): boolean {
    if (this.waiting.length > 0 || this.load.busy || !this.fits(weight)) return false;
    this.inside += weight;
    return true;
  }

  /** A request let in with `weight` has been answered (or its client went away). */
  leave(weight: number): void {
    this.inside -= weight;
    this.pump();
  }

  /** Lets the first waiting in if a connection is free and it fits, and weighs the next on the next turn. */
  private pump(): void {
    const first = this.waiting[0];
    if (!first || this.load.busy || !this.fits(first.weight)) return;
    this.waiting.shift();
    first.admit();
    if (this.waiting.length > 0 && !this.pumpScheduled) {
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
  }

  /**
   * The hooks of a scope: each request waits its turn once parsed, weighing `weigh(request)`
   * (at least 0), and counts until its answer is sent or its connection closes. A request whose
   * client closes its connection while it waits leaves the queue at once and is never run
   * (nobody would read the answer, and a client that gave up may already be sending it again):
   * it no longer counts against the limit, and takes no turn; one whose client is gone by its
   * turn is not run either.
   */
  guard(scope: FastifyInstance, weigh: (request: FastifyRequest) => number = () => 1): void {
    scope.addHook('preHandler', (request, reply, done) => {
      const weighed = weigh(request);
      const weight = Number.isFinite(weighed) ? Math.max(0, weighed) : 1;
      const socket = request.raw.socket;
      const goOn = () => {
        // A client gone by its turn: nobody would read the answer (and the 'close' events have
        // passed, so nothing would free its place). Fastify runs no later step of a hijacked request.
        if (reply.raw.destroyed || socket.destroyed) {
          reply.hijack();
          this.leave(weight);
          return;
        }
        // The answer's 'close' comes once it is sent, or when the connection closes before; but an
        // answer queued behind another on a pipelining connection gets none when the connection
        // closes: the connection's own 'close' frees its place then. Whichever comes first, once.
        const leave = () => {
          reply.raw.removeListener('close', leave);
          stopWatching();
          this.leave(weight);
        };
        reply.raw.once('close', leave);
        const stopWatching = onClose(socket, leave);
        done();
      };
      if (this.enteredAtOnce(weight)) {
        goOn();
        return;
      }
      const gone = new AbortController();
      let turn: Promise<boolean> | undefined;
      try {
        turn = this.enter(weight, gone.signal);
      } catch (error) {
        done(error as Error);
        return;
      }
      if (!turn) {
        goOn();
        return;
      }
      const stopWatching = onClose(socket, () => gone.abort());
      void turn.then((admitted) => {
        stopWatching();
        if (admitted) goOn();
        // It left the queue: Fastify sends nothing and runs no later step of a hijacked request.
        else reply.hijack();
      });
    });
  }
}
