import { Field, Int, ObjectType } from 'type-graphql';
import { Trainer } from './trainer.entity';

/** `totalCount` is a field of TrainerPageResolver, so it is counted only when asked for. */
@ObjectType({ description: 'One page of trainers, ordered by id ascending.', simpleResolvers: true })
export class TrainerPage {
  @Field(() => [Trainer])
  items!: Trainer[];

  @Field(() => Int)
  limit!: number;

  @Field(() => Int)
  offset!: number;
}
