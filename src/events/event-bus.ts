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

/**
 * Where creature events go after their write has committed, and where subscriptions find them:
 * listeners by trainer, in this process, and with REDIS_URL every other instance's too (see
 * RedisEventRelay).
 */
export class CreatureEventBus {
  private readonly listeners = new Map<number, Set<Listener>>();
  private relay: RedisEventRelay | undefined;
  /** Per followed trainer: when Redis confirmed following its channel. */
  private readonly following = new Map<number, Promise<void>>();

  /** Shares events with the other instances from now on. */
  relayThrough(relay: RedisEventRelay): void {
    this.relay = relay;
  }

  /** Delivers to this process's subscribers of the creature's trainer. */
  deliver(message: CreatureEventMessage): void {
    const listeners = this.listeners.get(message.creature.trainerId);
    if (!listeners) return;
    for (const listener of listeners) listener(message);
  }

  /** Publishes an event of a committed write: here at once, and to the other instances. */
  publish(message: CreatureEventMessage): void {
    this.deliver(message);
    this.relay?.publish(message);
  }

  /**
   * A trainer's events from now on, as a bounded queue; ends when returned or overflowing.
   * Resolves once the other instances' events of that trainer are followed too.
   */
  async subscribe(trainerId: number, onOverflow?: () => void): Promise<EventQueue<CreatureEventMessage>> {
    const queue: EventQueue<CreatureEventMessage> = new EventQueue(() => {
      const set = this.listeners.get(trainerId);
      set?.delete(listener);
      if (set?.size === 0) {
        this.listeners.delete(trainerId);
        this.following.delete(trainerId);
        this.relay?.unfollow(trainerId);
      }
    }, onOverflow);
    const listener: Listener = (message) => queue.push(message);
    let set = this.listeners.get(trainerId);
    if (!set) this.listeners.set(trainerId, (set = new Set()));
    set.add(listener);
    if (this.relay) {
      let followed = this.following.get(trainerId);
      if (!followed) this.following.set(trainerId, (followed = this.relay.follow(trainerId)));
      // Redis away: the subscription starts anyway, with this instance's events, and the follow
      // completes once Redis is back.
      await Promise.race([followed, new Promise((resolve) => setTimeout(resolve, FOLLOW_WAIT_MS).unref())]);
    }
    return queue;
  }

  /** How many subscriptions this process holds (for metrics and tests). */
  get size(): number {
    let count = 0;
    for (const set of this.listeners.values()) count += set.size;
    return count;
  }
}
