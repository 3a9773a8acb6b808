import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { storedLength } from '../common/text';
import { Team } from './team';

/** First and last names: 1..64 characters once trimmed, counted as sent (see namePattern). */
export const MAX_TRAINER_NAME = 64;

/**
 * A registered trainer. `email`, `creaturesOwned` and `creatures` are GraphQL fields
 * defined by TrainerResolver, because they depend on the caller or need batching.
 */
// simpleResolvers: the plain fields only read a property (no @Authorized field, no database access);
// email, creaturesOwned and creatures are field resolvers and keep the middlewares and the email rule.
@ObjectType({ description: 'A registered trainer. The password is never exposed.', simpleResolvers: true })
@Entity({ name: 'trainer' })
@Index('UQ_trainer_nickname_key', ['nicknameKey'], { unique: true })
@Index('UQ_trainer_email', ['email'], { unique: true })
// Narrow, for pages by offset (see the AddTrainerIdIndex migration).
@Index('IX_trainer_id', ['id'])
// A team's page walks its stretch in id order (see the ListsByIndex migration).
@Index('IX_trainer_team_id', ['team', 'id'])
export class Trainer {
  @Field(() => ID)
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: number;

  @Field()
  @Column({ type: 'varchar', length: 32 })
  nickname!: string;

  /** Lower-cased nickname: the unique index that makes nicknames case-insensitive. */
  @Column({ name: 'nickname_key', type: 'varchar', length: 32 })
  nicknameKey!: string;

  @Field()
  @Column({ name: 'first_name', type: 'varchar', length: storedLength(MAX_TRAINER_NAME) })
  firstName!: string;

  @Field()
  @Column({ name: 'last_name', type: 'varchar', length: storedLength(MAX_TRAINER_NAME) })
  lastName!: string;

  /** Stored lower-cased; exposed only to the trainer itself (see TrainerResolver.email). */
  @Column({ type: 'varchar', length: 254 })
  email!: string;

  @Column({ name: 'password_hash', type: 'varchar', length: 255, select: false })
  passwordHash!: string;

  /** How many creatures it owns, when the statement that read it asked (the creatures_owned column). */
  creaturesOwned?: number;

  /** The creatures_owned column: kept by every creature create and delete (see nextEventSeqStatements). */
  @Column({ name: 'creatures_owned', type: 'int', default: 0, select: false })
  creatureCount!: number;

  @Field(() => Team)
  @Column({ type: 'varchar', length: 8 })
  team!: Team;

  /** How many creature events the trainer has had: the last one's sequence number (see CreatureEventBus). */
  @Column({ name: 'event_seq', type: 'bigint', default: 0, select: false })
  eventSeq!: string;

  @Field()
  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;
}
