import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { maxNameKey, storedLength } from '../common/text';
import type { Trainer } from '../trainers/trainer.entity';

export const MAX_CREATURE_NAME = 32;

/**
 * The longest name key (NFKC can make one code point 18) plus room for the suffix the key
 * migration gives a creature whose name became another's (a NUL and an id). 600 utf8mb4
 * characters fit MySQL's 3,072-byte index limit with trainer_id.
 */
const NAME_KEY_LENGTH = maxNameKey(MAX_CREATURE_NAME) + 24;

/** A creature owned by exactly one trainer. `trainer` is a GraphQL field of CreatureResolver. */
// simpleResolvers: the plain fields only read a property (no @Authorized field, no database access), so
// type-graphql's middlewares would have nothing to do there; `trainer` is a field resolver and keeps them.
@ObjectType({ description: 'A creature owned by exactly one trainer.', simpleResolvers: true })
@Entity({ name: 'creature' })
@Index('UQ_creature_trainer_name', ['trainerId', 'nameKey'], { unique: true })
@Index('IX_creature_trainer_id', ['trainerId', 'id'])
export class Creature {
  @Field(() => ID)
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: number;

  @Field({ description: 'Unique per trainer, compared case-insensitively after trimming.' })
  @Column({ type: 'varchar', length: storedLength(MAX_CREATURE_NAME) })
  name!: string;

  /**
   * The name's key (see nameKey in common/text.ts): with trainerId, the unique index that rejects
   * duplicates. Wider than `name` (see NAME_KEY_LENGTH).
   */
  @Column({ name: 'name_key', type: 'varchar', length: NAME_KEY_LENGTH })
  nameKey!: string;

  @Field(() => Int, { description: 'Species number, 1..100000.' })
  @Column({ name: 'species_id', type: 'int' })
  speciesId!: number;

  @Field(() => Int, { description: '1..100.' })
  @Column({ type: 'int' })
  level!: number;

  @Column({ name: 'trainer_id', type: 'bigint' })
  trainerId!: number;

  // No inverse side on Trainer (nothing reads a trainer's creatures through TypeORM): the two
  // entity files would import each other.
  @ManyToOne('Trainer', { onDelete: 'CASCADE', nullable: false })
  @JoinColumn({ name: 'trainer_id', foreignKeyConstraintName: 'FK_creature_trainer' })
  trainer?: Relation<Trainer>;

  @Field()
  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;
}
