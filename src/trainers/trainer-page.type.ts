import { Field, Int, ObjectType } from 'type-graphql';
import { Trainer } from './trainer.entity';

/** `totalCount` is a field of TrainerPageResolver, so it is counted only when asked for. */
// simpleResolvers: items, limit and offset only read a property; totalCount is a field resolver
// (TrainerPageResolver) and keeps the middlewares (database errors).
@ObjectType({ description: 'One page of trainers, ordered by id ascending.', simpleResolvers: true })
export class TrainerPage {
  @Field(() => [Trainer])
  items!: Trainer[];

  @Field(() => Int)
  limit!: number;

  @Field(() => Int)
  offset!: number;

  @Field(() => String, {
    nullable: true,
    description: 'Pass as `after` to get the page that follows this one; null when no trainer follows.',
  })
  nextCursor!: string | null;

  /** How many trainers match the page's filter (not a GraphQL field: TrainerPageResolver.totalCount). */
  total!: () => Promise<number>;

  /**
   * A page as this type, its properties as they are: where the page is the @Root of a field
   * resolver (TrainerPageResolver.totalCount), type-graphql copies every property of an object
   * that is not an instance of this class into a new one, and the copy signed the page's cursor
   * (a getter, TrainerService.page) also for queries that never read nextCursor.
   */
  static of(page: Pick<TrainerPage, 'items' | 'limit' | 'offset' | 'nextCursor' | 'total'>): TrainerPage {
    return Object.defineProperties(new TrainerPage(), Object.getOwnPropertyDescriptors(page));
  }
}
