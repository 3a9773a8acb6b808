import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Creature } from '../creatures/creature.entity';

export enum CreatureEventKind {
  CREATED = 'CREATED',
  UPDATED = 'UPDATED',
  DELETED = 'DELETED',
}
registerEnumType(CreatureEventKind, { name: 'CreatureEventKind' });

/** Something that happened to a creature, as subscribers receive it. */
@ObjectType({ description: 'Something that happened to a creature.', simpleResolvers: true })
export class CreatureEvent {
  @Field(() => CreatureEventKind)
  kind!: CreatureEventKind;

  @Field(() => Creature, { description: 'The creature after the change; for DELETED, as it was.' })
  creature!: Creature;

  @Field()
  at!: Date;

  @Field(() => Int, {
    description:
      "The event's number among the trainer's creature events: one more than the one before. A jump means events were missed (an instance or Redis went away).",
  })
  sequence!: number;
}

/** An event as it travels between instances (JSON): the creature's plain fields, dates as ISO text. */
export interface CreatureEventMessage {
  readonly kind: CreatureEventKind;
  readonly creature: {
    readonly id: number;
    readonly name: string;
    readonly speciesId: number;
    readonly level: number;
    readonly trainerId: number;
    readonly createdAt: string;
  };
  readonly at: string;
  /** The trainer's event number (trainer.event_seq), given in the write's transaction. */
  readonly seq: number;
}

export function toMessage(kind: CreatureEventKind, creature: Creature, seq: number, at = new Date()): CreatureEventMessage {
  const { id, name, speciesId, level, trainerId, createdAt } = creature;
  return { kind, creature: { id, name, speciesId, level, trainerId, createdAt: createdAt.toISOString() }, at: at.toISOString(), seq };
}

/** A message as the GraphQL type: a Creature entity (its `trainer` field resolves through the loaders). */
export function fromMessage(message: CreatureEventMessage): CreatureEvent {
  const creature = Object.assign(new Creature(), message.creature, { createdAt: new Date(message.creature.createdAt) });
  return Object.assign(new CreatureEvent(), { kind: message.kind, creature, at: new Date(message.at), sequence: message.seq });
}
