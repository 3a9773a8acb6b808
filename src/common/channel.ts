import type { Cluster, Redis } from 'ioredis';

/** A Redis (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisClient = Redis | Cluster;
import { randomUUID } from 'node:crypto';

/**
 * What a channel carries and how it travels between instances. On Redis, each message is the
 * JSON `{ "origin": <the publishing instance>, "<field>": <message> }` on the channel `name`
 * (with `keyOf`, on `name` followed by the message's key).
 */
export interface ChannelSpec<T> {
  readonly name: string;
  readonly field: string;
  /** What the messages are, for the log ("session endings"). */
  readonly label: string;
  /** The message in what arrived from Redis, checked; undefined when it is not one (then it is dropped). */
  readonly decode: (value: unknown) => T | undefined;
}

/** A channel split by key: a Redis channel per key, which an instance follows only while it needs it. */
export interface KeyedChannelSpec<T> extends ChannelSpec<T> {
  readonly keyOf: (message: T) => number | string;
}

type Handler<T> = (message: T) => void;

/**
 * Messages for every instance: `publish` hands one to this process's subscribers at once (so they
 * keep arriving while Redis is away) and then, with Redis, to every other instance's; an instance
 * never receives its own back from Redis.
 */
export interface Channel<T> {
  publish(message: T): void;
  /** Calls `handler` for every message from now on; returns what stops it. */
  subscribe(handler: Handler<T>): () => void;
}

/** A channel whose other instances' messages arrive only for the keys followed. */
export interface KeyedChannel<T> extends Channel<T> {
  /** Follows `key`'s messages from the other instances: resolves once Redis confirms (never rejects); undefined when there is nothing to wait for. */
  follow(key: number | string): Promise<void> | undefined;
  unfollow(key: number | string): void;
  /** Whether other instances' messages can arrive right now. */
  readonly connected: boolean;
}

/** Where an app's channels come from: one per name, all over the app's one Redis connection pair (or in process). */
export interface Channels {
  channel<T>(spec: ChannelSpec<T>): Channel<T>;
  keyed<T>(spec: KeyedChannelSpec<T>): KeyedChannel<T>;
  /** Whether messages travel to and from the other instances right now; undefined without Redis. */
  readonly connected: boolean | undefined;
  /**
   * `connected`, checked with the servers where the connections' state cannot tell (a Redis
   * Cluster whose master is lost alone): for GET /readyz.
   */
  check(): Promise<boolean | undefined>;
  close(): Promise<void>;
}

export interface ChannelLog {
  warn(details: object, message: string): void;
}

/** A channel of this process alone (no REDIS_URL): messages reach its own subscribers only. */
class LocalChannel<T> implements KeyedChannel<T> {
  private readonly handlers = new Set<Handler<T>>();

  publish(message: T): void {
    this.deliver(message);
  }

  subscribe(handler: Handler<T>): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  follow(_key: number | string): Promise<void> | undefined {
    return undefined;
  }

  unfollow(_key: number | string): void {}

  get connected(): boolean {
    return false;
  }

  protected deliver(message: T): void {
    for (const handler of [...this.handlers]) handler(message);
  }
}

/** The channels of a single instance (no REDIS_URL). */
export class LocalChannels implements Channels {
  channel<T>(_spec: ChannelSpec<T>): Channel<T> {
    return new LocalChannel<T>();
  }

  keyed<T>(_spec: KeyedChannelSpec<T>): KeyedChannel<T> {
    return new LocalChannel<T>();
  }

  readonly connected = undefined;

  async check(): Promise<undefined> {
    return undefined;
  }

  async close(): Promise<void> {}
}

/** A channel of this process that is no app's (a service built alone, in tests). */
export const localChannel = <T>(): KeyedChannel<T> => new LocalChannel<T>();

/** What a Redis channel needs of its app's connections. */
interface RedisLink {
  readonly origin: string;
  readonly publisher: RedisClient;
  readonly subscriber: RedisClient;
  readonly log: ChannelLog;
  /**
   * On a Redis Cluster, sharded pub/sub (SPUBLISH, SSUBSCRIBE): a channel lives on the master of
   * its slot, so messages do not travel through every node; plain PUBLISH on a single Redis.
   */
  readonly sharded: boolean;
}

const isCluster = (client: RedisClient): client is Cluster => client.isCluster;

/** A Redis Cluster's masters are pinged at most this often for readiness (see RedisChannels.check), */
const CHECK_EVERY_MS = 1000;
/** and a master that has not answered within this counts as lost. */
const CHECK_TIMEOUT_MS = 500;

/** Whether both connections of the channels are up. */
const linked = ({ publisher, subscriber }: RedisLink): boolean => publisher.status === 'ready' && subscriber.status === 'ready';

class RedisChannel<T> extends LocalChannel<T> {
  constructor(
    private readonly link: RedisLink,
    private readonly spec: ChannelSpec<T>,
    private readonly nameOf: (message: T) => string,
  ) {
    super();
  }

  override publish(message: T): void {
    this.deliver(message);
    const { origin, publisher, log } = this.link;
    const channel = this.nameOf(message);
    const text = JSON.stringify({ origin, [this.spec.field]: message });
    (this.link.sharded ? publisher.spublish(channel, text) : publisher.publish(channel, text)).catch((error: unknown) =>
      log.warn({ err: error, channel }, `${this.spec.label} not shared: Redis unavailable`),
    );
  }

  override follow(key: number | string): Promise<void> {
    return this.listen(`${this.spec.name}${key}`);
  }

  override unfollow(key: number | string): void {
    const { subscriber, sharded } = this.link;
    const channel = `${this.spec.name}${key}`;
    (sharded ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel)).catch(() => undefined);
  }

  override get connected(): boolean {
    return linked(this.link);
  }

  /** Follows `channel`: while Redis is away, the subscriber connection queues this and follows it again once back. */
  listen(channel: string): Promise<void> {
    const { subscriber, sharded } = this.link;
    return (sharded ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel)).then(
      () => undefined,
      (error: unknown) => this.link.log.warn({ err: error, channel }, `cannot follow ${this.spec.label} through Redis yet`),
    );
  }

  /** A message from Redis: checked before it reaches a subscriber, dropped when it is not one or is this instance's own. */
  receive(text: string): void {
    let envelope: unknown;
    try {
      envelope = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof envelope !== 'object' || envelope === null) return;
    const fields = new Map(Object.entries(envelope));
    if (fields.get('origin') === this.link.origin) return;
    const message = this.spec.decode(fields.get(this.spec.field));
    if (message === undefined) return;
    try {
      this.deliver(message);
    } catch (error) {
      this.link.log.warn({ err: error }, `${this.spec.label} from Redis not delivered`);
    }
  }
}

/**
 * The channels of an instance among several, over Redis pub/sub: messages published through
 * `publisher` (the app's command connection, shared with the login throttle), followed on a
 * subscriber connection of its own, which queues its SUBSCRIBE commands while Redis is away and
 * follows its channels again once it is back. Every Redis command of the channels is here; on a
 * Redis Cluster they are sharded pub/sub's (SPUBLISH, SSUBSCRIBE on a subscriber per master).
 */
export class RedisChannels implements Channels {
  private readonly link: RedisLink;
  /** By Redis channel name, and by prefix for the keyed ones. */
  private readonly named = new Map<string, (text: string) => void>();
  private readonly prefixed: { readonly prefix: string; readonly receive: (text: string) => void }[] = [];
  private readonly labels: string[] = [];
  /** The last check of a Redis Cluster's masters (see `check`). */
  private checked: { readonly at: number; readonly answer: Promise<boolean> } | undefined;

  constructor(publisher: RedisClient, log: ChannelLog) {
    const sharded = publisher.isCluster;
    // Its commands wait while Redis is away (an offline queue, retried without end), unlike the publisher's.
    const subscriber = isCluster(publisher)
      ? publisher.duplicate([], {
          enableOfflineQueue: true,
          shardedSubscribers: true,
          redisOptions: { ...publisher.options.redisOptions, maxRetriesPerRequest: null },
        })
      : publisher.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.link = { origin: randomUUID(), publisher, subscriber, log, sharded };
    subscriber.on('error', (error: unknown) =>
      log.warn({ err: error }, `redis unavailable; ${this.labels.join(', ')} reach this instance only`),
    );
    subscriber.on(sharded ? 'smessage' : 'message', (channel: string, text: string) => {
      const receive = this.named.get(channel) ?? this.prefixed.find(({ prefix }) => channel.startsWith(prefix))?.receive;
      receive?.(text);
    });
  }

  /** A channel every instance follows from its start. */
  channel<T>(spec: ChannelSpec<T>): Channel<T> {
    const channel = new RedisChannel(this.link, spec, () => spec.name);
    this.named.set(spec.name, (text) => channel.receive(text));
    this.labels.push(spec.label);
    void channel.listen(spec.name);
    return channel;
  }

  keyed<T>(spec: KeyedChannelSpec<T>): KeyedChannel<T> {
    const channel = new RedisChannel(this.link, spec, (message) => `${spec.name}${spec.keyOf(message)}`);
    this.prefixed.push({ prefix: spec.name, receive: (text) => channel.receive(text) });
    this.labels.push(spec.label);
    return channel;
  }

  get connected(): boolean {
    return linked(this.link);
  }

  /**
   * A Redis Cluster reports itself ready while one of its masters is lost (the slots of that
   * master, and the channels in them, are away; its connection may not even have been opened,
   * ioredis connects to a master when a command is for it): every master is pinged, at most once
   * every CHECK_EVERY_MS whatever the number of /readyz calls, and one that has not answered
   * within CHECK_TIMEOUT_MS counts as lost. A single Redis: the connections' state.
   */
  check(): Promise<boolean> {
    const { publisher } = this.link;
    if (!isCluster(publisher) || !linked(this.link)) return Promise.resolve(linked(this.link));
    const now = Date.now();
    if (this.checked && now - this.checked.at < CHECK_EVERY_MS) return this.checked.answer;
    const answer = Promise.all(
      publisher.nodes('master').map(
        (node) =>
          new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
            node.ping().then(
              () => resolve(true),
              () => resolve(false),
            );
            timer.unref();
          }),
      ),
    ).then((answers) => answers.every(Boolean) && linked(this.link));
    this.checked = { at: now, answer };
    return answer;
  }

  /** Disconnects, not quits: quit would wait behind commands queued while Redis is away. */
  async close(): Promise<void> {
    this.link.subscriber.disconnect();
  }
}
