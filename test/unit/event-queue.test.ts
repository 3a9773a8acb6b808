import { localChannel, type KeyedChannel } from '../../src/common/channel';
import { CreatureEventBus, EventQueue, isExpired, positionsOnly, type EventSource, type EventStream } from '../../src/events/event-bus';
import { CreatureEventKind, toMessage, type BusMessage } from '../../src/events/creature-event';

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
import { Creature } from '../../src/creatures/creature.entity';

const creatureOf = (trainerId: number, id: number) =>
  Object.assign(new Creature(), { id, name: `c${id}`, speciesId: 1, level: 1, trainerId, createdAt: new Date(0) });

describe('EventQueue', () => {
  it('hands out items in order, waiting for the next one when empty', async () => {
    const queue = new EventQueue<number>(() => undefined);
    queue.push(1);
    const second = queue.next().then(() => queue.next());
    queue.push(2);
    expect(await second).toEqual({ value: 2, done: false });
  });

  it('drops a reader that falls more than its bound behind: told once, then ended and emptied', async () => {
    let ended = 0;
    let overflowed = 0;
    const queue = new EventQueue<number>(
      () => (ended += 1),
      () => (overflowed += 1),
      3,
    );
    for (let i = 0; i < 10; i += 1) queue.push(i);
    expect([ended, overflowed]).toEqual([1, 1]);
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });

  it('takes a deleted trainer’s final events beyond its bound, hands them all out, then ends once', async () => {
    let ended = 0;
    let overflowed = 0;
    const queue = new EventQueue<number>(
      () => (ended += 1),
      () => (overflowed += 1),
      3,
    );
    queue.push(0);
    queue.pushFinal([1, 2, 3, 4, 5], false);
    queue.pushFinal([6, 7], true);
    queue.push(99);
    const taken: number[] = [];
    for await (const item of queue) taken.push(item);
    expect(taken).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([ended, overflowed]).toEqual([1, 0]);
  });

  it('holds a deleted trainer’s final events shared between its subscribers, not a copy per subscriber', async () => {
    const run = Array.from({ length: 100_000 }, (_, i) => i);
    // As the bus hands them over: one array per DeletionMessage, the same for every subscriber.
    const chunks = Array.from({ length: 100 }, (_, i) => run.slice(i * 1000, (i + 1) * 1000));
    const before = process.memoryUsage().heapUsed;
    const queues = Array.from({ length: 200 }, () => {
      const queue = new EventQueue<number>(() => undefined, undefined, 3);
      queue.push(-1);
      for (const chunk of chunks) queue.pushFinal(chunk, false);
      queue.pushFinal([], true);
      return queue;
    });
    // A copy per subscriber would be 200 x 100,000 references (about 160 MB).
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(40 * 1024 * 1024);
    const taken: number[] = [];
    for await (const item of queues[0]) taken.push(item);
    expect(taken).toEqual([-1, ...run]);
  });

  it('hands a waiting reader the first of a final run, then the rest in order', async () => {
    const queue = new EventQueue<number>(() => undefined);
    const waiting = queue.next();
    queue.pushFinal([1, 2, 3], false);
    queue.pushFinal([4], true);
    expect(await waiting).toEqual({ value: 1, done: false });
    const taken: number[] = [];
    for await (const item of queue) taken.push(item);
    expect(taken).toEqual([2, 3, 4]);
  });

  it('answers a waiting reader with the end when the final events are none', async () => {
    let ended = 0;
    const queue = new EventQueue<number>(() => (ended += 1));
    const waiting = queue.next();
    queue.pushFinal([], true);
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(ended).toBe(1);
  });

  it('waits for its pace before handing out an item, and ends instead when returned meanwhile', async () => {
    let release!: () => void;
    let slow = true;
    const queue = new EventQueue<number>(
      () => undefined,
      undefined,
      10,
      () => (slow ? new Promise<void>((resolve) => (release = resolve)) : undefined),
    );
    queue.push(1);
    queue.push(2);
    const first = queue.next();
    slow = false;
    release();
    expect(await first).toEqual({ value: 1, done: false });
    slow = true;
    const second = queue.next();
    await queue.return();
    release();
    expect(await second).toEqual({ value: undefined, done: true });
  });
});

/** The numbers of the events a subscriber takes, as it takes them. */
function collect(queue: EventStream | null): number[] {
  const seen: number[] = [];
  void (async () => {
    for await (const message of queue!) seen.push(isExpired(message) ? -1 : message.seq);
  })();
  return seen;
}

/** What the subscriber took once everything already on its way was handed over. */
const settled = async (seen: number[]) => {
  await new Promise((resolve) => setImmediate(resolve));
  return [...seen];
};

const event = (trainerId: number, seq: number) => toMessage(CreatureEventKind.CREATED, creatureOf(trainerId, seq), seq);

describe('CreatureEventBus', () => {
  /** A bus whose trainers 1 and 2 exist, with `last` as the number of their last event. */
  const busAt = (last = 0, gapWaitMs = 50) =>
    new CreatureEventBus(
      positionsOnly((trainerId) => Promise.resolve(trainerId <= 2 ? last : null)),
      { gapWaitMs, checkEveryMs: 0 },
    );

  it('delivers to the subscribers of the creature’s trainer only, and forgets a subscriber once it returns', async () => {
    const bus = busAt();
    const mine = (await bus.subscribe(1))!;
    const theirs = (await bus.subscribe(2))!;
    bus.publish(event(1, 1));
    const first = await mine.next();
    expect(first.done || isExpired(first.value) ? undefined : first.value.creature.id).toBe(1);
    expect(bus.size).toBe(2);
    await theirs.return();
    await mine.return();
    expect(bus.size).toBe(0);
  });

  it('answers null for a trainer that does not exist, holding nothing', async () => {
    const bus = busAt();
    expect(await bus.subscribe(3)).toBeNull();
    expect(bus.size).toBe(0);
  });

  it('starts after the trainer’s last event, and delivers early events in their turn, once each', async () => {
    const bus = busAt(4);
    const queue = collect(await bus.subscribe(1));
    bus.deliver(event(1, 4)); // before the subscription: not delivered
    await bus.during(1, async () => {
      bus.deliver(event(1, 7));
      bus.deliver(event(1, 6));
      expect(await settled(queue)).toEqual([]);
      bus.deliver(event(1, 5));
      bus.deliver(event(1, 6)); // the same event again (Redis and this process)
    });
    expect(await settled(queue)).toEqual([5, 6, 7]);
  });

  it('does not wait for a gap nothing can fill: with no write under way here and no Redis, and nothing kept, it is skipped at once', async () => {
    const bus = busAt(0);
    const queue = collect(await bus.subscribe(1));
    bus.deliver(event(1, 3)); // 1 and 2 were written by an instance this one cannot hear
    expect(await settled(queue)).toEqual([3]);
    bus.deliver(event(1, 2)); // too late: never after a later one
    bus.deliver(event(1, 4));
    expect(await settled(queue)).toEqual([3, 4]);
  });

  it('waits for a gap while a write is under way, and gives it up after the gap wait', async () => {
    const bus = busAt(0, 50);
    const queue = collect(await bus.subscribe(1));
    let finish!: () => void;
    const write = bus.during(1, () => new Promise<void>((resolve) => (finish = resolve)));
    bus.deliver(event(1, 2));
    expect(await settled(queue)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await settled(queue)).toEqual([2]);
    finish();
    await write;
    bus.deliver(event(1, 1));
    expect(await settled(queue)).toEqual([2]);
  });

  it('delivers what a gap held back once the write under way ends without filling it (rolled back)', async () => {
    const bus = busAt(0, 60_000);
    const queue = collect(await bus.subscribe(1));
    await bus
      .during(1, async () => {
        bus.deliver(event(1, 2));
        expect(await settled(queue)).toEqual([]);
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    expect(await settled(queue)).toEqual([2]);
  });

  it('gives a late subscriber the events from its start, in order with the others', async () => {
    const bus = busAt(0);
    const early = collect(await bus.subscribe(1));
    bus.deliver(event(1, 1));
    const late = collect(await bus.subscribe(1));
    bus.deliver(event(1, 2));
    expect(await settled(early)).toEqual([1, 2]);
    expect(await settled(late)).toEqual([2]);
  });

  describe('with kept events', () => {
    /** Trainer 1's events 1..`last` are kept from `first` on; `position` is its last number (changeable). */
    function keptSource(first: number, state: { last: number }): EventSource & { reads: number } {
      const source = {
        reads: 0,
        position: async (trainerId: number) => (trainerId === 1 ? state.last : null),
        positions: async (ids: readonly number[]) => new Map(ids.filter((id) => id === 1).map((id) => [id, state.last])),
        read: async (_trainerId: number, after: number, upTo: number, limit: number) => {
          source.reads += 1;
          const events = [];
          for (let seq = Math.max(after + 1, first); seq <= Math.min(upTo, state.last) && events.length < limit; seq += 1)
            events.push(event(1, seq));
          return events;
        },
        firstKept: async () => (state.last >= first ? first : null),
      };
      return source;
    }

    it('replays the kept events after `after`, then the live ones, with no gap and no duplicate at the seam', async () => {
      const state = { last: 600 };
      const bus = new CreatureEventBus(keptSource(1, state), { checkEveryMs: 0 });
      const seen = collect(await bus.subscribe(1, { after: 10 }));
      state.last = 601;
      bus.deliver(event(1, 601));
      for (let i = 0; i < 50 && seen.length < 591; i += 1) await settled(seen);
      expect(seen).toEqual(Array.from({ length: 591 }, (_, i) => 11 + i));
    });

    it('refuses an `after` older than what is kept (EVENTS_EXPIRED) and one the trainer has not reached (BAD_USER_INPUT)', async () => {
      const bus = new CreatureEventBus(keptSource(100, { last: 1500 }), { checkEveryMs: 0 });
      await expect(bus.subscribe(1, { after: 98 })).rejects.toMatchObject({ code: 'EVENTS_EXPIRED' });
      await expect(bus.subscribe(1, { after: 1501 })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
      const from99 = collect(await bus.subscribe(1, { after: 99 }));
      for (let i = 0; i < 50 && from99.length < 1401; i += 1) await settled(from99);
      expect(from99.length).toBe(1401);
      expect(bus.size).toBe(1);
    });

    it('ends a replay with EXPIRED when what it still had to send was pruned meanwhile', async () => {
      const state = { last: 600 };
      const source = keptSource(1, state);
      const bus = new CreatureEventBus(source, { checkEveryMs: 0 });
      const events = (await bus.subscribe(1, { after: 0 }))!;
      // The first chunk is read; then everything up to 300 goes before the second read.
      const read = (trainerId: number, after: number, upTo: number, limit: number) =>
        keptSource(1, state).read(trainerId, after, upTo, limit);
      let reads = 0;
      source.read = async (trainerId, after, upTo, limit) => {
        reads += 1;
        return reads === 1 ? read(trainerId, after, upTo, limit) : (await read(trainerId, after, upTo, limit)).filter((e) => e.seq > 300);
      };
      const seen = collect(events);
      for (let i = 0; i < 50 && !seen.includes(-1); i += 1) await settled(seen);
      expect(seen).toEqual([...Array.from({ length: 256 }, (_, i) => i + 1), -1]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(bus.size).toBe(0);
    });

    it('starts a late subscriber’s live events where its replay ends, also when another subscriber set the stream going meanwhile', async () => {
      // Redis never confirms the follow: each subscription waits FOLLOW_WAIT_MS on its own clock.
      const local = localChannel<BusMessage>();
      const channel: KeyedChannel<BusMessage> = {
        publish: (message) => local.publish(message),
        subscribe: (handler) => local.subscribe(handler),
        follow: () => new Promise<void>(() => undefined),
        unfollow: () => undefined,
        connected: false,
      };
      const state = { last: 5 };
      const bus = new CreatureEventBus(keptSource(1, state), { checkEveryMs: 0 }, channel);
      const early = bus.subscribe(1);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const missedSix = bus.subscribe(1, { after: 5 });
      // This one saw event 6 on another instance already.
      const sawSix = bus.subscribe(1, { after: 6 });
      const first = collect(await early);
      // The stream is going (from 6) and event 6 reaches every listener before the late ones resolve.
      state.last = 6;
      bus.deliver(event(1, 6));
      const fromFive = collect(await missedSix);
      const fromSix = collect(await sawSix);
      state.last = 7;
      bus.deliver(event(1, 7));
      for (let i = 0; i < 10; i += 1) await settled(fromSix);
      expect(fromFive).toEqual([6, 7]);
      expect(fromSix).toEqual([7]);
      expect(first).toEqual([6, 7]);
    });

    it('keeps a gap for the next check when reading the kept events failed, instead of giving it up', async () => {
      const state = { last: 0 };
      const source = keptSource(1, state);
      const read = source.read.bind(source);
      let failures = 1;
      source.read = async (trainerId, after, upTo, limit) => {
        if (failures > 0) {
          failures -= 1;
          throw new Error('the database is away');
        }
        return read(trainerId, after, upTo, limit);
      };
      const bus = new CreatureEventBus(source, { checkEveryMs: 30 });
      try {
        const seen = collect(await bus.subscribe(1));
        state.last = 3;
        bus.deliver(event(1, 3));
        expect(await settled(seen)).toEqual([]);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(await settled(seen)).toEqual([1, 2, 3]);
      } finally {
        await bus.stop();
      }
    });

    it('reads from the kept events instead of dropping a subscriber whose live events pile up while it replays', async () => {
      const state = { last: 300 };
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let paced = false;
      let dropped = false;
      const bus = new CreatureEventBus(keptSource(1, state), { checkEveryMs: 0 });
      const events = await bus.subscribe(1, {
        after: 0,
        onOverflow: () => (dropped = true),
        // The reader's connection is slow: the replay waits at its first event.
        pace: () => (paced ? undefined : held),
      });
      const seen = collect(events);
      await settled(seen);
      // 400 live events meanwhile: more than the queue holds.
      for (let seq = 301; seq <= 700; seq += 1) {
        state.last = seq;
        bus.deliver(event(1, seq));
      }
      paced = true;
      release();
      for (let i = 0; i < 100 && seen.length < 700; i += 1) await settled(seen);
      expect(dropped).toBe(false);
      expect(seen).toEqual(range(1, 700));
      bus.deliver(event(1, 701));
      for (let i = 0; i < 20 && seen.length < 701; i += 1) await settled(seen);
      expect(seen.at(-1)).toBe(701);
    });

    it('fills a gap from the kept events instead of skipping it', async () => {
      const state = { last: 0 };
      const bus = new CreatureEventBus(keptSource(1, state), { checkEveryMs: 0 });
      const seen = collect(await bus.subscribe(1));
      state.last = 3;
      bus.deliver(event(1, 3)); // 1 and 2 came through an instance this one cannot hear
      expect(await settled(seen)).toEqual([1, 2, 3]);
    });

    it('finds the events that never came (no later one shows the gap) at its next check', async () => {
      const state = { last: 0 };
      const bus = new CreatureEventBus(keptSource(1, state), { checkEveryMs: 20 });
      try {
        const seen = collect(await bus.subscribe(1));
        state.last = 2;
        await new Promise((resolve) => setTimeout(resolve, 80));
        expect(await settled(seen)).toEqual([1, 2]);
      } finally {
        await bus.stop();
      }
    });
  });
});
