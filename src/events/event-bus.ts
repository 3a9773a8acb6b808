import { localChannel, type KeyedChannel, type KeyedChannelSpec } from '../common/channel';
import { deletedEvents, isDeletion, type BusMessage, type CreatureEventMessage } from './creature-event';

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

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
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

/** Where the bus reads a trainer's last event number (null: no such trainer). */
export type EventPosition = (trainerId: number) => Promise<number | null>;

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
 * here, or Redis connected), and at most GAP_WAIT_MS; then the missing events count as lost
 * (their instance died, or Redis was away) and delivery goes on. Nothing is ever delivered twice
 * or after a later event.
 */
export class CreatureEventBus {
  private readonly streams = new Map<number, Stream>();
  /** Per trainer: writes of its creatures under way in this process (see `during`). */
  private readonly writing = new Map<number, number>();

  constructor(
    private readonly position: EventPosition,
    private readonly gapWaitMs = GAP_WAIT_MS,
    /** Events to and from the other instances (CREATURE_EVENTS). */
    private readonly channel: KeyedChannel<BusMessage> = localChannel(),
  ) {
    channel.subscribe((message) => this.deliver(message));
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
   */
  async subscribe(
    trainerId: number,
    onOverflow?: () => void,
    pace?: () => Promise<void> | undefined,
  ): Promise<EventQueue<CreatureEventMessage> | null> {
    let stream = this.streams.get(trainerId);
    if (!stream) {
      stream = { listeners: new Set(), next: undefined, held: new Map(), gapTimer: undefined, start: undefined, followed: undefined };
      this.streams.set(trainerId, stream);
    }
    const joined = stream;
    const listener: Listener = (events, deletion, end) => {
      if (deletion) queue.pushFinal(events, end);
      else for (const event of events) queue.push(event);
    };
    const queue: EventQueue<CreatureEventMessage> = new EventQueue(
      () => this.leave(trainerId, joined, listener),
      onOverflow,
      MAX_QUEUED_EVENTS,
      pace,
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
    this.channel.unfollow(trainerId);
  }
}
