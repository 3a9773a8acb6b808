import type { CreatureEventMessage } from './creature-event';
import type { RedisEventRelay } from './redis-relay';

/** Events waiting for one subscriber before it counts as too slow and is dropped. */
const MAX_QUEUED_EVENTS = 256;
/** How long a new subscription waits for Redis to confirm it follows the trainer's channel. */
const FOLLOW_WAIT_MS = 1000;

/**
 * One subscriber's events as an async iterator (what a GraphQL subscription consumes). Bounded:
 * a subscriber that falls MAX_QUEUED_EVENTS behind is told (`onOverflow`, which drops its
 * connection) and ends, instead of holding events in memory without limit.
 */
export class EventQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiting: ((result: IteratorResult<T>) => void) | undefined;
  private ended = false;

  constructor(
    private readonly onEnd: () => void,
    private readonly onOverflow: () => void = () => undefined,
    private readonly max = MAX_QUEUED_EVENTS,
  ) {}

  push(item: T): void {
    if (this.ended) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: item, done: false });
      return;
    }
    if (this.items.length >= this.max) {
      this.end();
      this.onOverflow();
      return;
    }
    this.items.push(item);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
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

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.items.length = 0;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
    this.onEnd();
  }
}

type Listener = (message: CreatureEventMessage) => void;

/** How long a trainer's later events wait for a missing earlier one before it counts as lost. */
const GAP_WAIT_MS = 1000;
/** Events held back behind a gap, per trainer, before the gap counts as lost at once. */
const MAX_HELD = 1024;

/** Where the bus reads a trainer's last event number (null: no such trainer). */
export type EventPosition = (trainerId: number) => Promise<number | null>;

/** One trainer's events in this process, while it has subscribers here. */
interface Stream {
  readonly listeners: Set<Listener>;
  /** The number of the next event to deliver; undefined until the trainer's position is read. */
  next: number | undefined;
  /** Events that arrived before their turn, by number. */
  readonly held: Map<number, CreatureEventMessage>;
  /** Running while a gap keeps held events back: when it fires, the gap counts as lost. */
  gapTimer: NodeJS.Timeout | undefined;
  /** Reading the trainer's position, for its first subscribers. */
  start: Promise<number | null> | undefined;
  /** When Redis confirmed following the trainer's channel. */
  followed: Promise<void> | undefined;
}

/**
 * Where creature events go after their write has committed, and where subscriptions find them:
 * listeners by trainer, in this process, and with REDIS_URL every other instance's too (see
 * RedisEventRelay).
 *
 * Order: each event carries its trainer's event number, given in the write's transaction (see
 * CreatureService), so numbers follow commit order. Events can still arrive out of order (two
 * instances publishing at once, Redis a hop slower than this process), so each trainer's events
 * are delivered by number: one that comes early is held until the ones before it have come.
 * A gap is waited for only while something could fill it (a write of that trainer under way
 * here, or Redis connected), and at most GAP_WAIT_MS; then the missing events count as lost
 * (their instance died, or Redis was away) and delivery goes on. Nothing is ever delivered twice
 * or after a later event.
 */
export class CreatureEventBus {
  private readonly streams = new Map<number, Stream>();
  /** Per trainer: writes of its creatures under way in this process (see `during`). */
  private readonly writing = new Map<number, number>();
  private relay: RedisEventRelay | undefined;

  constructor(
    private readonly position: EventPosition,
    private readonly gapWaitMs = GAP_WAIT_MS,
  ) {}

  /** Shares events with the other instances from now on. */
  relayThrough(relay: RedisEventRelay): void {
    this.relay = relay;
  }

  /** Delivers to this process's subscribers of the creature's trainer, in the trainer's order. */
  deliver(message: CreatureEventMessage): void {
    const trainerId = message.creature.trainerId;
    const stream = this.streams.get(trainerId);
    if (!stream) return;
    // Delivered already, or given up on: never twice, never after a later one.
    if (stream.next !== undefined && message.seq < stream.next) return;
    if (stream.held.size >= MAX_HELD && stream.next === undefined) return;
    stream.held.set(message.seq, message);
    this.advance(trainerId, stream);
  }

  /** Publishes an event of a committed write: here at once, and to the other instances. */
  publish(message: CreatureEventMessage): void {
    this.deliver(message);
    this.relay?.publish(message);
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
   */
  async subscribe(trainerId: number, onOverflow?: () => void): Promise<EventQueue<CreatureEventMessage> | null> {
    let stream = this.streams.get(trainerId);
    if (!stream) {
      stream = { listeners: new Set(), next: undefined, held: new Map(), gapTimer: undefined, start: undefined, followed: undefined };
      this.streams.set(trainerId, stream);
    }
    const joined = stream;
    const listener: Listener = (message) => queue.push(message);
    const queue: EventQueue<CreatureEventMessage> = new EventQueue(() => this.leave(trainerId, joined, listener), onOverflow);
    joined.listeners.add(listener);
    try {
      if (this.relay) {
        joined.followed ??= this.relay.follow(trainerId);
        // Redis away: the subscription starts anyway, with this instance's events, and the follow
        // completes once Redis is back.
        await Promise.race([joined.followed, new Promise((resolve) => setTimeout(resolve, FOLLOW_WAIT_MS).unref())]);
      }
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
    return queue;
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
      stream.next += 1;
      moved = true;
      for (const listener of stream.listeners) listener(message);
    }
    if (moved || stream.held.size === 0) {
      clearTimeout(stream.gapTimer);
      stream.gapTimer = undefined;
    }
    if (stream.held.size === 0) return;
    const fillable = this.writing.has(trainerId) || (this.relay?.connected ?? false);
    if (!fillable || stream.held.size >= MAX_HELD) {
      this.skipGap(trainerId, stream);
      return;
    }
    stream.gapTimer ??= setTimeout(() => {
      stream.gapTimer = undefined;
      this.skipGap(trainerId, stream);
    }, this.gapWaitMs).unref();
  }

  /** The missing events count as lost: delivery goes on from the first held one. */
  private skipGap(trainerId: number, stream: Stream): void {
    if (stream.held.size === 0) return;
    stream.next = Math.min(...stream.held.keys());
    this.advance(trainerId, stream);
  }

  private leave(trainerId: number, stream: Stream, listener: Listener): void {
    stream.listeners.delete(listener);
    if (stream.listeners.size > 0 || this.streams.get(trainerId) !== stream) return;
    this.streams.delete(trainerId);
    clearTimeout(stream.gapTimer);
    this.relay?.unfollow(trainerId);
  }
}
