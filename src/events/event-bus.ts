import { localChannel, type KeyedChannel, type KeyedChannelSpec } from '../common/channel';
import { AppError } from '../errors';
import { deletedEvents, isDeletion, type BusMessage, type CreatureEventMessage } from './creature-event';

/** What a resumed subscription ends with when the events it missed are no longer kept. */
export const expiredError = (): AppError =>
  new AppError(
    'EVENTS_EXPIRED',
    'The events after this sequence are no longer kept: fetch the creatures again, then subscribe without after',
  );

/** Events waiting for one subscriber before it counts as too slow and is dropped. */
const MAX_QUEUED_EVENTS = 256;
/**
 * Items a queue hands out one after the other before it lets the event loop turn: a reader takes
 * queued items without waiting for I/O, so a long run of them (a deleted trainer's DELETED
 * events, each executed as GraphQL) would otherwise hold every other request of the process.
 */
const ITEMS_PER_TURN = 32;
/** How long a new subscription waits for Redis to confirm it follows the trainer's channel. */
const FOLLOW_WAIT_MS = 1000;

/**
 * One subscriber's events as an async iterator (what a GraphQL subscription consumes). Bounded:
 * a subscriber that falls MAX_QUEUED_EVENTS behind is told (`onOverflow`, which drops its
 * connection) and ends, instead of holding events in memory without limit.
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  /**
   * A deleted trainer's final events, as the runs they arrived in: the same arrays for every
   * subscriber of this process (see `pushFinal`), with the position reached in the first.
   */
  private readonly runs: (readonly T[])[] = [];
  private runAt = 0;
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;
  /** No more items will come: the queue ends once those it holds are taken. */
  private closing = false;
  /** Items handed out since the event loop last turned for this queue. */
  private inARow = 0;

  constructor(
    private readonly onEnd: () => void,
    private readonly onOverflow: () => void = () => undefined,
    private readonly max = MAX_QUEUED_EVENTS,
    /**
     * Asked before each item is handed out: a promise while the reader's connection has too
     * much unsent (the item waits here instead of in the socket's buffer), else undefined.
     */
    private readonly pace: () => Promise<void> | undefined = () => undefined,
    /**
     * Asked when the queue is full: true when what it holds may be dropped instead of the reader
     * (a resuming subscriber still replaying, which reads them again from the kept events).
     */
    private readonly shed: () => boolean = () => false,
  ) {}

  push(item: T): void {
    if (this.ended || this.closing) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: item, done: false });
      return;
    }
    if (this.items.length >= this.max) {
      if (this.shed()) {
        this.items.length = 0;
        this.items.push(item);
        return;
      }
      this.end();
      this.onOverflow();
      return;
    }
    this.items.push(item);
  }

  /**
   * A run of a deleted trainer's DELETED events, and with `last` the end of the queue once they
   * are taken. They are not held to `max` (there are as many as the trainer had creatures, and
   * no more will come), but the queue holds only a reference to `items`, which the caller shares
   * between every subscriber of this process: a subscriber costs the same memory whatever the
   * number of creatures, a reference per run (each run is a DeletionMessage's, up to
   * DELETION_CHUNK events). They are handed out at the pace of the reader's socket (`pace`).
   */
  pushFinal(items: readonly T[], last: boolean): void {
    if (this.ended || this.closing) return;
    if (items.length > 0) {
      if (this.waiting && !this.holding) {
        const resolve = this.waiting;
        this.waiting = undefined;
        resolve({ value: items[0], done: false });
        if (items.length > 1) {
          // Nothing else is held: the run is the first, and its first item is taken.
          this.runs.push(items);
          this.runAt = 1;
        }
      } else this.runs.push(items);
    }
    if (!last) return;
    this.closing = true;
    // Someone waits and nothing is left for it: the end is its answer.
    if (!this.holding && this.waiting) this.end();
  }

  async next(): Promise<IteratorResult<T>> {
    if (this.holding) {
      this.inARow += 1;
      if (this.inARow >= ITEMS_PER_TURN) {
        this.inARow = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const wait = this.pace();
      if (wait) await wait;
      // Returned (the socket closed) while waiting.
      if (this.ended) return { value: undefined, done: true };
      return { value: this.take(), done: false };
    }
    this.inARow = 0;
    if (this.ended) return { value: undefined, done: true };
    if (this.closing) {
      this.end();
      return { value: undefined, done: true };
    }
    return new Promise((resolve) => (this.waiting = resolve));
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Ended: returned, overflowed or its subscriber gone. */
  get finished(): boolean {
    return this.ended;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Whether an item waits to be taken. */
  private get holding(): boolean {
    return this.items.length > 0 || this.runs.length > 0;
  }

  /** The next item: those pushed one by one come before the final runs. */
  private take(): T {
    if (this.items.length > 0) return this.items.shift()!;
    const run = this.runs[0];
    const value = run[this.runAt];
    this.runAt += 1;
    if (this.runAt === run.length) {
      this.runs.shift();
      this.runAt = 0;
    }
    return value;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.items.length = 0;
    this.runs.length = 0;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
    this.onEnd();
  }
}

/**
 * Receives events in order: one of a write, or (`deletion`) a run of a deleted trainer's DELETED
 * events, `end` with the last of them.
 */
type Listener = (events: readonly CreatureEventMessage[], deletion: boolean, end: boolean) => void;

/** How long a trainer's later events wait for a missing earlier one before it counts as lost. */
const GAP_WAIT_MS = 1000;
/** Events held back behind a gap, per trainer, before the gap counts as lost at once. */
const MAX_HELD = 1024;

const trainerOf = (message: BusMessage): number => (isDeletion(message) ? message.trainerId : message.creature.trainerId);

/**
 * Creature events between instances: a channel per trainer, which an instance follows while it
 * has subscribers of that trainer. Whatever arrives is checked before it reaches a subscriber.
 */
export const CREATURE_EVENTS: KeyedChannelSpec<BusMessage> = {
  name: 'registry:creature-events:',
  field: 'event',
  label: 'creature events',
  keyOf: trainerOf,
  decode: (value) => {
    if (typeof value !== 'object' || value === null) return undefined;
    const event = value as BusMessage;
    if (!Number.isSafeInteger(event.seq)) return undefined;
    if (event.kind !== 'TRAINER_DELETED') {
      const { creature } = event;
      return typeof creature === 'object' && creature !== null && typeof creature.trainerId === 'number' ? event : undefined;
    }
    const { trainerId, creatures, last, trainer } = event;
    if (!Number.isSafeInteger(trainerId) || !Array.isArray(creatures) || typeof last !== 'boolean') return undefined;
    if (typeof trainer !== 'object' || trainer === null || trainer.id !== trainerId) return undefined;
    return event;
  },
};

/** What the bus reads from the database: the trainers' event numbers and their kept events (EventLog). */
export interface EventSource {
  /** A trainer's last event number; null when there is no such trainer. */
  position(trainerId: number): Promise<number | null>;
  /** The last event numbers of these trainers (those that exist). */
  positions(trainerIds: readonly number[]): Promise<Map<number, number>>;
  /** The trainer's kept events numbered above `after` and up to `upTo`, in order, at most `limit`. */
  read(trainerId: number, after: number, upTo: number, limit: number): Promise<CreatureEventMessage[]>;
  /** The number of the trainer's oldest kept event; null when none is kept. */
  firstKept(trainerId: number): Promise<number | null>;
}

/** A source with nothing kept (a bus in unit tests): gaps are given up on, nothing is replayed. */
export const positionsOnly = (position: (trainerId: number) => Promise<number | null>): EventSource => ({
  position,
  positions: async (ids) => {
    const found = new Map<number, number>();
    for (const id of ids) {
      const last = await position(id);
      if (last !== null) found.set(id, last);
    }
    return found;
  },
  read: async () => [],
  firstKept: async () => null,
});

/**
 * What a resuming subscriber gets instead of an event when the events it missed are no longer
 * kept (pruned while it replayed): its subscription then ends with EVENTS_EXPIRED.
 */
const EXPIRED = Object.freeze({ expired: true as const });
export type Expired = typeof EXPIRED;

export const isExpired = (item: CreatureEventMessage | Expired): item is Expired => item === EXPIRED;

/** One subscriber's events (an EventQueue, or kept events then one): `finished` once it has ended. */
export interface EventStream extends AsyncIterableIterator<CreatureEventMessage | Expired> {
  readonly finished: boolean;
  return(): Promise<IteratorResult<CreatureEventMessage | Expired>>;
  [Symbol.asyncIterator](): EventStream;
}

/** Kept events read per statement: by a resuming subscriber, and when a gap is filled. */
const READ_CHUNK = 256;
/**
 * How often the event numbers of the trainers followed here are compared with the database
 * (one statement per CHECK_CHUNK trainers): events that never came (Redis away, a message lost, a
 * subscriber connection that was re-following its channels) are then read from the kept ones and
 * delivered, in order, within that time.
 */
const CHECK_EVERY_MS = 2000;
const CHECK_CHUNK = 500;

export interface BusOptions {
  /** How long later events wait for a missing one before it is read from the kept events (GAP_WAIT_MS). */
  readonly gapWaitMs?: number;
  /** How often followed trainers are checked for events that never came (CHECK_EVERY_MS; 0: never). */
  readonly checkEveryMs?: number;
}

export interface SubscribeOptions {
  /** Called when the subscriber falls too far behind (its connection is then dropped). */
  readonly onOverflow?: () => void;
  /** A promise while the reader's connection has too much unsent (see EventQueue). */
  readonly pace?: () => Promise<void> | undefined;
  /** The last event number the subscriber saw: the kept events after it come first. */
  readonly after?: number;
}

/** One trainer's events in this process, while it has subscribers here. */
interface Stream {
  readonly listeners: Set<Listener>;
  /** The number of the next event to deliver; undefined until the trainer's position is read. */
  next: number | undefined;
  /** Messages that arrived before their turn, by (first) number. */
  readonly held: Map<number, BusMessage>;
  /** Running while a gap keeps held events back: when it fires, the gap counts as lost. */
  gapTimer: NodeJS.Timeout | undefined;
  /** Reading the trainer's position, for its first subscribers. */
  start: Promise<number | null> | undefined;
  /** When Redis confirmed following the trainer's channel. */
  followed: Promise<void> | undefined;
  /** Reading kept events into `held` (fill): one read at a time per trainer. */
  filling: boolean;
}

/**
 * Where creature events go after their write has committed, and where subscriptions find them:
 * listeners by trainer, in this process, and with REDIS_URL every other instance's too (see
 * CREATURE_EVENTS). Events published while Redis is unreachable reach only the publishing
 * instance's subscribers.
 *
 * Order: each event carries its trainer's event number, given in the write's transaction (see
 * CreatureService), so numbers follow commit order. Events can still arrive out of order (two
 * instances publishing at once, Redis a hop slower than this process), so each trainer's events
 * are delivered by number: one that comes early is held until the ones before it have come.
 * A gap is waited for only while something could fill it (a write of that trainer under way
 * here, or Redis connected), and at most GAP_WAIT_MS; then the missing events are read from the
 * kept ones (EventLog: their instance died after its commit, or Redis was away). Every
 * CHECK_EVERY_MS the followed trainers' numbers are compared with the database, so events that
 * never came, with no later one to show the gap, are read too. Only events that are not kept
 * (a deleted trainer's) count as lost, and delivery goes on. Nothing is ever delivered twice or
 * after a later event.
 *
 * A subscriber that resumes (`after`) is sent the kept events after the one it saw, then the
 * live ones: the live ones start where the replay ends (see `subscribe`).
 */
export class CreatureEventBus {
  private readonly streams = new Map<number, Stream>();
  /** Per trainer: writes of its creatures under way in this process (see `during`). */
  private readonly writing = new Map<number, number>();
  private readonly gapWaitMs: number;
  private checkTimer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly source: EventSource,
    { gapWaitMs = GAP_WAIT_MS, checkEveryMs = CHECK_EVERY_MS }: BusOptions = {},
    /** Events to and from the other instances (CREATURE_EVENTS). */
    private readonly channel: KeyedChannel<BusMessage> = localChannel(),
  ) {
    this.gapWaitMs = gapWaitMs;
    channel.subscribe((message) => this.deliver(message));
    if (checkEveryMs > 0) {
      const tick = () => {
        this.checking = this.checkFollowed()
          .catch(() => undefined)
          .finally(() => {
            this.checking = undefined;
            if (this.checkTimer) this.checkTimer = setTimeout(tick, checkEveryMs).unref();
          });
      };
      this.checkTimer = setTimeout(tick, checkEveryMs).unref();
    }
  }

  /** Stops checking the followed trainers (the app's close). */
  async stop(): Promise<void> {
    clearTimeout(this.checkTimer);
    this.checkTimer = undefined;
    await this.checking;
  }

  /** Delivers to this process's subscribers of the creature's trainer, in the trainer's order. */
  deliver(message: BusMessage): void {
    const trainerId = trainerOf(message);
    const stream = this.streams.get(trainerId);
    if (!stream) return;
    // Delivered already, or given up on: never twice, never after a later one.
    if (stream.next !== undefined && message.seq < stream.next) return;
    if (stream.held.size >= MAX_HELD && stream.next === undefined) return;
    stream.held.set(message.seq, message);
    this.advance(trainerId, stream);
  }

  /** Publishes an event of a committed write: here at once, and to the other instances. */
  publish(message: BusMessage): void {
    this.channel.publish(message);
  }

  /**
   * Runs a write of the trainer's creatures that publishes its event before it resolves. While
   * it runs, a gap in the trainer's numbers is waited for: the write may be what fills it.
   */
  async during<T>(trainerId: number, write: () => Promise<T>): Promise<T> {
    this.writing.set(trainerId, (this.writing.get(trainerId) ?? 0) + 1);
    try {
      return await write();
    } finally {
      const left = this.writing.get(trainerId)! - 1;
      if (left === 0) this.writing.delete(trainerId);
      else this.writing.set(trainerId, left);
      const stream = this.streams.get(trainerId);
      if (stream) this.advance(trainerId, stream);
    }
  }

  /**
   * A trainer's events from now on, as a bounded queue; ends when returned or overflowing.
   * Resolves once the other instances' events of that trainer are followed too, and the
   * trainer's position is known; null when there is no such trainer.
   *
   * With `after` (the last number the subscriber saw), the kept events numbered above it come
   * first, read a chunk at a time as the subscriber takes them, then the live ones, which start
   * right after the position read when the subscription joined: no gap, no duplicate at the seam.
   * EVENTS_EXPIRED when what it missed is no longer kept (then the subscriber refetches);
   * BAD_USER_INPUT when `after` is a number the trainer has not reached.
   */
  async subscribe(trainerId: number, { onOverflow, pace, after }: SubscribeOptions = {}): Promise<EventStream | null> {
    // While it replays, live events that pile up past the queue's bound are dropped and read from the kept ones instead.
    const replay = { replaying: after !== undefined, shed: false };
    const shed = () => replay.replaying && (replay.shed = true);
    const joined = await this.join(trainerId, onOverflow, pace, shed);
    if (!joined) return null;
    const { queue, from } = joined;
    if (after === undefined) {
      replay.replaying = false;
      return queue;
    }
    try {
      if (after < from - 1) {
        const first = await this.source.firstKept(trainerId);
        if (first === null || first > after + 1) throw expiredError();
      } else if (after > from - 1) {
        // Seen elsewhere already (the queue may hold it too, and will be skipped up to it), or not made yet.
        const position = await this.source.position(trainerId);
        if (position === null || after > position) {
          throw new AppError('BAD_USER_INPUT', 'after is beyond the last event of this trainer', [
            { field: 'after', message: "must be a sequence of one of the trainer's events" },
          ]);
        }
      }
    } catch (error) {
      void queue.return();
      throw error;
    }
    // Nothing to read when `after` is at or past where the live events start: they are skipped up to it.
    const events = this.replayed(trainerId, after, Math.max(after, from - 1), queue, pace, replay);
    const stream: EventStream = {
      next: () => events.next(),
      // Also before the replay has started (a generator not started yet skips its `finally`).
      return: () => {
        void queue.return();
        return events.return(undefined);
      },
      get finished() {
        return queue.finished;
      },
      [Symbol.asyncIterator]: () => stream,
    };
    return stream;
  }

  /**
   * The kept events numbered `after` + 1 to `last`, then `queue`'s (see subscribe). When live
   * events piled up past the queue's bound meanwhile (`replay.shed`: the queue dropped them), the
   * replay reads on from the kept events up to the trainer's position then, and again, until it
   * has caught up without the queue overflowing; the queue's events it has already sent are skipped.
   */
  private async *replayed(
    trainerId: number,
    after: number,
    last: number,
    queue: EventQueue<CreatureEventMessage>,
    pace: (() => Promise<void> | undefined) | undefined,
    replay: { replaying: boolean; shed: boolean },
  ): AsyncGenerator<CreatureEventMessage | Expired> {
    try {
      let seen = after;
      let inARow = 0;
      for (let upTo: number | null = last; upTo !== null;) {
        while (seen < upTo) {
          const events = await this.source.read(trainerId, seen, upTo, READ_CHUNK);
          // Pruned since the subscription started (it was kept then): the client must refetch.
          if (events.length === 0 || events[0].seq !== seen + 1) {
            yield EXPIRED;
            return;
          }
          for (const event of events) {
            if (event.seq !== seen + 1) {
              yield EXPIRED;
              return;
            }
            inARow += 1;
            if (inARow >= ITEMS_PER_TURN) {
              inARow = 0;
              await new Promise((resolve) => setImmediate(resolve));
            }
            const wait = pace?.();
            if (wait) await wait;
            if (queue.finished) return;
            seen = event.seq;
            yield event;
          }
        }
        if (!replay.shed) break;
        replay.shed = false;
        upTo = await this.source.position(trainerId);
      }
      replay.replaying = false;
      for await (const event of queue) {
        if (event.seq <= seen) continue;
        seen = event.seq;
        yield event;
      }
    } finally {
      replay.replaying = false;
      void queue.return();
    }
  }

  /** Joins the trainer's stream: the subscriber's queue, and the number of the first event it will get. */
  private async join(
    trainerId: number,
    onOverflow?: () => void,
    pace?: () => Promise<void> | undefined,
    shed?: () => boolean,
  ): Promise<{ queue: EventQueue<CreatureEventMessage>; from: number } | null> {
    let stream = this.streams.get(trainerId);
    if (!stream) {
      stream = {
        listeners: new Set(),
        next: undefined,
        held: new Map(),
        gapTimer: undefined,
        start: undefined,
        followed: undefined,
        filling: false,
      };
      this.streams.set(trainerId, stream);
    }
    const joined = stream;
    /** The number of the first event the listener got. */
    let first: number | undefined;
    const listener: Listener = (events, deletion, end) => {
      if (first === undefined && events.length > 0) first = events[0].seq;
      if (deletion) queue.pushFinal(events, end);
      else for (const event of events) queue.push(event);
    };
    const queue: EventQueue<CreatureEventMessage> = new EventQueue(
      () => this.leave(trainerId, joined, listener),
      onOverflow,
      MAX_QUEUED_EVENTS,
      pace,
      shed,
    );
    joined.listeners.add(listener);
    try {
      joined.followed ??= this.channel.follow(trainerId);
      // Redis away: the subscription starts anyway, with this instance's events, and the follow
      // completes once Redis is back.
      if (joined.followed) await Promise.race([joined.followed, new Promise((resolve) => setTimeout(resolve, FOLLOW_WAIT_MS).unref())]);
      if (joined.next === undefined) {
        // After following: every event numbered above the position read is then on its way here.
        joined.start ??= this.position(trainerId).finally(() => (joined.start = undefined));
        const last = await joined.start;
        if (last === null) {
          void queue.return();
          return null;
        }
        if (joined.next === undefined) {
          joined.next = last + 1;
          for (const seq of joined.held.keys()) if (seq <= last) joined.held.delete(seq);
          this.advance(trainerId, joined);
        }
      }
    } catch (error) {
      void queue.return();
      throw error;
    }
    // The listener gets every event the stream delivers from the moment it was added: its first
    // event so far, or, when none has come yet, the next the stream will deliver.
    return { queue, from: first ?? joined.next };
  }

  private position(trainerId: number): Promise<number | null> {
    return this.source.position(trainerId);
  }

  /** How many subscriptions this process holds (for metrics and tests). */
  get size(): number {
    let count = 0;
    for (const stream of this.streams.values()) count += stream.listeners.size;
    return count;
  }

  /** Delivers what is next in line; then, if events are held behind a gap, waits for it or gives it up. */
  private advance(trainerId: number, stream: Stream): void {
    if (stream.next === undefined) return;
    let moved = false;
    for (let message = stream.held.get(stream.next); message; message = stream.held.get(stream.next)) {
      stream.held.delete(stream.next);
      // A deletion's message stands for as many events as it carries creatures (made once, shared by the listeners).
      const events = isDeletion(message) ? deletedEvents(message) : [message];
      stream.next += events.length;
      moved = true;
      const deletion = isDeletion(message);
      const end = isDeletion(message) ? message.last : false;
      for (const listener of [...stream.listeners]) listener(events, deletion, end);
      if (end) break;
    }
    if (moved || stream.held.size === 0) {
      clearTimeout(stream.gapTimer);
      stream.gapTimer = undefined;
    }
    if (stream.held.size === 0) return;
    const fillable = this.writing.has(trainerId) || this.channel.connected;
    if (!fillable || stream.held.size >= MAX_HELD) {
      this.skipGap(trainerId, stream);
      return;
    }
    stream.gapTimer ??= setTimeout(() => {
      stream.gapTimer = undefined;
      this.skipGap(trainerId, stream);
    }, this.gapWaitMs).unref();
  }

  /**
   * The missing events are read from the kept ones (a later one has come, so they have all
   * committed: numbers are given under the trainer's row lock); those that are not kept count as
   * lost, and delivery goes on from the first held one.
   */
  private skipGap(trainerId: number, stream: Stream): void {
    // A read under way delivers, then settles, what it finds.
    if (stream.filling || stream.held.size === 0 || stream.next === undefined) return;
    const upTo = Math.min(...stream.held.keys()) - 1;
    void this.fill(trainerId, stream, upTo).then((read) => {
      // A read that failed (the database away) gives nothing up: the gap waits for the next check.
      if (read) this.settle(trainerId, stream, upTo);
    });
  }

  /**
   * After a read of the kept events up to `tried`: what is still missing up to there is not kept
   * (lost), and delivery goes on from the first held event; a gap beyond `tried` is waited for or
   * read as any other.
   */
  private settle(trainerId: number, stream: Stream, tried: number): void {
    if (this.streams.get(trainerId) !== stream || stream.next === undefined || stream.held.size === 0) return;
    const first = Math.min(...stream.held.keys());
    if (!stream.held.has(stream.next) && first - 1 <= tried) stream.next = first;
    this.advance(trainerId, stream);
  }

  /**
   * Reads the trainer's kept events from `next` up to `upTo` into `held`, delivering each chunk
   * as it comes; whether it read all there is. One read at a time per trainer (false for another
   * while one runs); a failed read (the database away) is false too, and leaves the rest to the
   * next check.
   */
  private async fill(trainerId: number, stream: Stream, upTo: number): Promise<boolean> {
    if (stream.filling) return false;
    stream.filling = true;
    try {
      while (stream.next !== undefined && stream.next <= upTo && this.streams.get(trainerId) === stream) {
        const from = stream.next;
        const events = await this.source.read(trainerId, from - 1, upTo, READ_CHUNK);
        for (const event of events) if (stream.next !== undefined && event.seq >= stream.next) stream.held.set(event.seq, event);
        if (stream.next !== undefined && stream.held.has(stream.next)) this.advance(trainerId, stream);
        if (events.length < READ_CHUNK || stream.next === from) return true;
      }
      return true;
    } catch {
      return false;
    } finally {
      stream.filling = false;
    }
  }

  /**
   * Compares the event numbers of the trainers followed here with the database, and reads the
   * kept events that never came (see CHECK_EVERY_MS).
   */
  private async checkFollowed(): Promise<void> {
    const ids = [...this.streams.entries()].filter(([, stream]) => stream.next !== undefined && !stream.filling).map(([id]) => id);
    for (let i = 0; i < ids.length; i += CHECK_CHUNK) {
      const positions = await this.source.positions(ids.slice(i, i + CHECK_CHUNK));
      for (const [trainerId, last] of positions) {
        const stream = this.streams.get(trainerId);
        if (stream?.next === undefined || last < stream.next || stream.filling) continue;
        if (await this.fill(trainerId, stream, last)) this.settle(trainerId, stream, last);
      }
    }
  }

  private leave(trainerId: number, stream: Stream, listener: Listener): void {
    stream.listeners.delete(listener);
    if (stream.listeners.size > 0 || this.streams.get(trainerId) !== stream) return;
    this.streams.delete(trainerId);
    clearTimeout(stream.gapTimer);
    this.channel.unfollow(trainerId);
  }
}
