import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, OneToMany, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import type { Creature } from '../creatures/creature.entity';
import { storedLength } from '../common/text';
import { Team } from './team';

/** First and last names: 1..64 characters once trimmed, counted as sent (see namePattern). */
export const MAX_TRAINER_NAME = 64;

/**
 * The trainer's JSON as the REST shim writes it, after its id and without the closing brace:
 * `,"nickname":"...","firstName":"...","lastName":"...","team":"...","creaturesOwned":n,"createdAt":"...Z"`
 * (the Trainer schema's order; rest/schemas.ts). Generated and stored by the database (the
 * TrainerJson migration); the same text runs on MySQL/MariaDB and SQLite (3.44 and later have
 * CONCAT). JSON_QUOTE escapes as JSON.stringify does, and a DATETIME(3) cast to text is
 * `YYYY-MM-DD HH:MM:SS.mmm` on both (SQLite keeps it as the text the service writes, see
 * Sql.date; a row written there by plain SQL in another form shows that form in REST pages).
 */
export const TRAINER_JSON_TAIL =
  `CONCAT(',"nickname":', JSON_QUOTE(nickname), ',"firstName":', JSON_QUOTE(first_name), ',"lastName":', JSON_QUOTE(last_name),` +
  ` ',"team":', JSON_QUOTE(team), ',"creaturesOwned":', creatures_owned, ',"createdAt":"', REPLACE(CAST(created_at AS CHAR), ' ', 'T'), 'Z"')`;

/**
 * Room for the longest the columns can hold, even written by plain SQL: two names of 192
 * characters each escaped to 6 (a control character as \uXXXX), a nickname of 32 and the rest
 * (about 2,400 characters).
 */
export const TRAINER_JSON_TAIL_LENGTH = 2600;

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

  /** TRAINER_JSON_TAIL, kept by the database; REST pages read it (TrainerQueries.asJson). */
  @Column({
    name: 'rest_json',
    type: 'varchar',
    length: TRAINER_JSON_TAIL_LENGTH,
    nullable: true,
    generatedType: 'STORED',
    asExpression: TRAINER_JSON_TAIL,
    select: false,
    insert: false,
    update: false,
  })
  restJson?: string;

  @OneToMany('Creature', (creature: Creature) => creature.trainer)
  creatures?: Relation<Creature[]>;
}
