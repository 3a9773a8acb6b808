import { CreatureEventBus, EventQueue } from '../../src/events/event-bus';
import { CreatureEventKind, toMessage } from '../../src/events/creature-event';
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
});

describe('CreatureEventBus', () => {
  it('delivers to the subscribers of the creature’s trainer only, and forgets a subscriber once it returns', async () => {
    const bus = new CreatureEventBus();
    const mine = await bus.subscribe(1);
    const theirs = await bus.subscribe(2);
    bus.publish(toMessage(CreatureEventKind.CREATED, creatureOf(1, 10)));
    const first = await mine.next();
    expect(first.done ? undefined : first.value.creature.id).toBe(10);
    expect(bus.size).toBe(2);
    await theirs.return();
    await mine.return();
    expect(bus.size).toBe(0);
  });
});
