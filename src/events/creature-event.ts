import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { Creature } from '../creatures/creature.entity';
import type { Team } from '../trainers/team';
import { Trainer } from '../trainers/trainer.entity';

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
  /** For the DELETED events of a deleted trainer: the trainer as it was (there is no row to read it from any more). */
  readonly trainer?: DeletedTrainer;
}

/** A deleted trainer's public profile as it was, for its creatures' last events (no email: nothing private outlives it). */
export interface DeletedTrainer {
  readonly id: number;
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly team: Team;
  readonly createdAt: string;
}

export function toMessage(kind: CreatureEventKind, creature: Creature, seq: number, at = new Date()): CreatureEventMessage {
  const { id, name, speciesId, level, trainerId, createdAt } = creature;
  return { kind, creature: { id, name, speciesId, level, trainerId, createdAt: createdAt.toISOString() }, at: at.toISOString(), seq };
}

/** A message as the GraphQL type: a Creature entity (its `trainer` field resolves through the loaders). */
export function fromMessage(message: CreatureEventMessage): CreatureEvent {
  const creature = Object.assign(new Creature(), message.creature, { createdAt: new Date(message.creature.createdAt) });
  if (message.trainer) {
    creature.trainer = Object.assign(new Trainer(), message.trainer, { createdAt: new Date(message.trainer.createdAt), creaturesOwned: 0 });
  }
  return Object.assign(new CreatureEvent(), { kind: message.kind, creature, at: new Date(message.at), sequence: message.seq });
}

/**
 * A deleted trainer's creatures, as DELETED events numbered one after the other from `seq`: one
 * message carries up to a chunk of them (a trainer with many creatures takes several), and
 * `last` says that the trainer's events end with it (its subscriptions then complete). The last
 * may be empty (a trainer without creatures gets one, empty and last).
 */
export interface DeletionMessage {
  readonly kind: 'TRAINER_DELETED';
  readonly trainerId: number;
  readonly seq: number;
  readonly trainer: DeletedTrainer;
  readonly creatures: readonly CreatureEventMessage['creature'][];
  readonly at: string;
  readonly last: boolean;
}

/** What travels on a trainer's stream of events, in this process and between instances. */
export type BusMessage = CreatureEventMessage | DeletionMessage;

export const isDeletion = (message: BusMessage): message is DeletionMessage => message.kind === 'TRAINER_DELETED';

/** Creatures per DeletionMessage: a Redis message of a few hundred KiB, and a short stretch of the deletion's reads and deletes. */
export const DELETION_CHUNK = 1000;

/** A deleted trainer's public profile, as its creatures' last events carry it. */
export function deletedTrainer(trainer: Trainer): DeletedTrainer {
  const { id, nickname, firstName, lastName, team } = trainer;
  return { id, nickname, firstName, lastName, team, createdAt: trainer.createdAt.toISOString() };
}

/**
 * One message of a trainer's deletion: `creatures` (up to DELETION_CHUNK, oldest first) numbered
 * from `seq`; `last` when the trainer's events end with it. A deletion sends its creatures as they
 * are removed, a message at a time (see AccountService.remove).
 */
export function deletionMessage(
  trainer: DeletedTrainer,
  seq: number,
  creatures: readonly Creature[],
  last: boolean,
  at: string,
): DeletionMessage {
  return {
    kind: 'TRAINER_DELETED',
    trainerId: trainer.id,
    seq,
    trainer,
    creatures: creatures.map((creature) => toMessage(CreatureEventKind.DELETED, creature, 0).creature),
    at,
    last,
  };
}

/** The DELETED events a DeletionMessage stands for, in order. */
export function deletedEvents(message: DeletionMessage): CreatureEventMessage[] {
  return message.creatures.map((creature, i) => ({
    kind: CreatureEventKind.DELETED,
    creature,
    at: message.at,
    seq: message.seq + i,
    trainer: message.trainer,
  }));
}
