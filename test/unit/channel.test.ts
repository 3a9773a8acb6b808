import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { LocalChannels, RedisChannels, type ChannelSpec, type KeyedChannelSpec } from '../../src/common/channel';
import { until } from '../helpers/events';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';

/*
 * The one channel that creature events, session endings and list changes travel on: in this
 * process alone (no REDIS_URL), and between instances over a real Redis (each instance with its
 * own connections, on a channel name of this test's own).
 */

interface Note {
  readonly n: number;
  readonly tag?: string;
}

const specOf = (name: string): KeyedChannelSpec<Note> => ({
  name,
  field: 'note',
  label: 'notes',
  keyOf: (note) => note.n,
  decode: (value) => {
    if (typeof value !== 'object' || value === null) return undefined;
    const { n, tag } = value as Partial<Record<keyof Note, unknown>>;
    if (typeof n !== 'number' || (tag !== undefined && typeof tag !== 'string')) return undefined;
    return { n, tag };
  },
});

const quietLog = () => {
  const warnings: string[] = [];
  return { warnings, warn: (_details: object, message: string) => void warnings.push(message) };
};

describe('LocalChannels: one instance, no Redis', () => {
  const spec: ChannelSpec<Note> = specOf('test:local');

  it("hands a message to every subscriber of the instance at once, and to no other instance's", async () => {
    const here = new LocalChannels();
    const elsewhere = new LocalChannels();
    const channel = here.channel(spec);
    const first: Note[] = [];
    const second: Note[] = [];
    const other: Note[] = [];
    channel.subscribe((note) => first.push(note));
    const stop = channel.subscribe((note) => second.push(note));
    elsewhere.channel(spec).subscribe((note) => other.push(note));
    channel.publish({ n: 1 });
    stop();
    channel.publish({ n: 2 });
    expect(first.map((note) => note.n)).toEqual([1, 2]);
    expect(second.map((note) => note.n)).toEqual([1]);
    expect(other).toEqual([]);
    await here.close();
  });

  it('has nothing to follow and no other instance to hear from', () => {
    const keyed = new LocalChannels().keyed(specOf('test:local:'));
    expect(keyed.follow(1)).toBeUndefined();
    expect(keyed.connected).toBe(false);
  });
});

describe('RedisChannels: two instances over a real Redis', () => {
  let reachable = false;
  const connections: Redis[] = [];
  const hubs: RedisChannels[] = [];
  const name = `test:channel:${randomUUID()}`;

  /** An instance's command connection (as app.ts makes it) and its channels. */
  const instance = async () => {
    const redis = new Redis(REDIS_TEST_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    connections.push(redis);
    await new Promise((resolve) => redis.once('ready', resolve));
    const log = quietLog();
    const hub = new RedisChannels(redis, log);
    hubs.push(hub);
    return { hub, log };
  };

  beforeAll(async () => {
    reachable = await redisReachable('the Redis channel tests are');
  });
  afterAll(async () => {
    for (const hub of hubs) await hub.close();
    for (const redis of connections) redis.disconnect();
  });

  it("delivers a message published on one instance to the other's subscribers, decoded, and never back to its own twice", async () => {
    if (!reachable) return;
    const a = await instance();
    const b = await instance();
    const onA: Note[] = [];
    const onB: Note[] = [];
    const channelA = a.hub.channel(specOf(name));
    channelA.subscribe((note) => onA.push(note));
    b.hub.channel(specOf(name)).subscribe((note) => onB.push(note));
    // B follows from its start; once one message arrives, it hears every later one.
    for (let n = 1; onB.length === 0; n += 1) {
      channelA.publish({ n });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    onB.length = 0;
    const published = onA.length;
    channelA.publish({ n: 1000, tag: 'typed' });
    await until(() => onB.length === 1, 'the message on instance B');
    expect(onB).toEqual([{ n: 1000, tag: 'typed' }]);
    // A's own subscriber had it at once, and not again from Redis.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(onA.length).toBe(published + 1);
    expect(onA[onA.length - 1]).toEqual({ n: 1000, tag: 'typed' });
  });

  it('drops what is not a message (not JSON, no envelope, a wrong shape) without throwing, and goes on', async () => {
    if (!reachable) return;
    const b = await instance();
    const onB: Note[] = [];
    const keyed = b.hub.keyed(specOf(`${name}:`));
    keyed.subscribe((note) => onB.push(note));
    await keyed.follow(7);
    expect(keyed.connected).toBe(true);
    const raw = connections[connections.length - 1];
    const channel = `${name}:7`;
    for (const text of [
      'not json',
      'null',
      '42',
      '{"origin":"x"}',
      '{"origin":"x","note":{"n":"seven"}}',
      '{"origin":"x","note":{"n":7,"tag":3}}',
    ])
      await raw.publish(channel, text);
    await raw.publish(channel, '{"origin":"x","note":{"n":7,"tag":"good","extra":true}}');
    await until(() => onB.length === 1, 'the well-formed message');
    expect(onB).toEqual([{ n: 7, tag: 'good' }]);
  });

  it("follows a keyed channel's keys one by one: a key not followed is not heard, nor one unfollowed", async () => {
    if (!reachable) return;
    const a = await instance();
    const b = await instance();
    const keyedA = a.hub.keyed(specOf(`${name}:k:`));
    const keyedB = b.hub.keyed(specOf(`${name}:k:`));
    const onB: number[] = [];
    keyedB.subscribe((note) => onB.push(note.n));
    await keyedB.follow(2);
    keyedA.publish({ n: 1 });
    keyedA.publish({ n: 2 });
    await until(() => onB.length === 1, 'the followed key');
    keyedB.unfollow(2);
    await keyedB.follow(3);
    keyedA.publish({ n: 2 });
    keyedA.publish({ n: 3 });
    await until(() => onB.length === 2, 'the newly followed key');
    expect(onB).toEqual([2, 3]);
  });

  it("logs, and does not throw, when a subscriber fails on another instance's message", async () => {
    if (!reachable) return;
    const a = await instance();
    const b = await instance();
    const keyedA = a.hub.keyed(specOf(`${name}:f:`));
    const keyedB = b.hub.keyed(specOf(`${name}:f:`));
    const onB: number[] = [];
    keyedB.subscribe((note) => {
      if (note.n === 1) throw new Error('subscriber failed');
      onB.push(note.n);
    });
    await keyedB.follow(1);
    await keyedB.follow(2);
    keyedA.publish({ n: 1 });
    keyedA.publish({ n: 2 });
    await until(() => onB.length === 1, 'the message after the failed one');
    expect(b.log.warnings).toContain('notes from Redis not delivered');
  });
});
