import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { BusMessage } from './creature-event';

const CHANNEL_PREFIX = 'registry:creature-events:';

/** What travels on a trainer's channel: the event, and the instance that published it. */
interface Envelope {
  readonly origin: string;
  readonly event: BusMessage;
}

export interface RelayLog {
  warn(details: object, message: string): void;
}

/**
 * Shares creature events between instances through Redis pub/sub: one channel per trainer, which
 * an instance follows while it has subscribers of that trainer. An instance delivers its own
 * events to its own subscribers directly (so they keep arriving while Redis is away) and skips
 * them when Redis echoes them back. Events published while Redis is unreachable reach only the
 * publishing instance's subscribers; the subscriber connection reconnects and follows its
 * channels again by itself.
 */
export class RedisEventRelay {
  private readonly origin = randomUUID();

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly deliver: (event: BusMessage) => void,
    private readonly log: RelayLog,
  ) {
    subscriber.on('message', (channel: string, text: string) => {
      if (!channel.startsWith(CHANNEL_PREFIX)) return;
      // Whatever arrives on the channel is checked before it reaches a subscriber.
      let envelope: Partial<Envelope>;
      try {
        envelope = JSON.parse(text) as Partial<Envelope>;
      } catch {
        return;
      }
      const event = envelope?.event;
      if (envelope?.origin === this.origin || typeof event !== 'object' || event === null) return;
      if (!Number.isSafeInteger(event.seq)) return;
      if (event.kind === 'TRAINER_DELETED') {
        const { trainerId, creatures, last, trainer } = event;
        if (!Number.isSafeInteger(trainerId) || !Array.isArray(creatures) || typeof last !== 'boolean') return;
        if (typeof trainer !== 'object' || trainer === null || trainer.id !== trainerId) return;
      } else if (typeof event.creature !== 'object' || event.creature === null || typeof event.creature.trainerId !== 'number') return;
      try {
        this.deliver(event);
      } catch (error) {
        this.log.warn({ err: error }, 'creature event from Redis not delivered');
      }
    });
  }

  /** Whether the channels are followed right now (else nothing arrives from the other instances). */
  get connected(): boolean {
    return this.subscriber.status === 'ready';
  }

  publish(event: BusMessage): void {
    const envelope: Envelope = { origin: this.origin, event };
    const trainerId = event.kind === 'TRAINER_DELETED' ? event.trainerId : event.creature.trainerId;
    this.publisher
      .publish(`${CHANNEL_PREFIX}${trainerId}`, JSON.stringify(envelope))
      .catch((error: unknown) => this.log.warn({ err: error, trainerId }, 'creature event not shared: Redis unavailable'));
  }

  follow(trainerId: number): Promise<void> {
    return this.subscriber.subscribe(`${CHANNEL_PREFIX}${trainerId}`).then(
      () => undefined,
      (error: unknown) => this.log.warn({ err: error, trainerId }, 'cannot follow creature events through Redis yet'),
    );
  }

  unfollow(trainerId: number): void {
    this.subscriber.unsubscribe(`${CHANNEL_PREFIX}${trainerId}`).catch(() => undefined);
  }
}
