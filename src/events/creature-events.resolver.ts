import { Args, ArgsType, Ctx, Field, ID, Int, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import { IsEntityId, parseId } from '../common/validation';
import { AppError } from '../errors';
import type { GraphQLContext } from '../graphql/context';
import { CreatureEvent, fromMessage, type CreatureEventMessage } from './creature-event';
import { expiredError, isExpired, type Expired } from './event-bus';

@ArgsType()
export class CreatureEventsArgs {
  @Field(() => ID)
  @IsEntityId()
  trainerId!: string;

  @Field(() => Int, {
    nullable: true,
    description:
      'The last sequence the client saw: the events after it that are still kept come first, then live ones, with no gap and no duplicate. Without it: live events only. Events are kept at least EVENTS_RETENTION (24h by default) and at least the last 1,000 of each trainer; older: EVENTS_EXPIRED.',
  })
  after?: number | null;
}

/**
 * `creatureEvents(trainerId, after)`: any authenticated trainer may follow any trainer's
 * creatures. The checks run once, when the subscription starts (type-graphql validates arguments
 * per event, not before subscribing, so they are checked here, before anything is subscribed).
 */
async function subscribeToCreatureEvents({ args, context }: SubscribeResolverData<unknown, CreatureEventsArgs, GraphQLContext>) {
  await context.auth.requireViewer();
  const trainerId = parseId(args.trainerId);
  if (trainerId === undefined) {
    throw new AppError('BAD_USER_INPUT', 'trainerId must be a trainer id', [
      { field: 'trainerId', message: 'must be a positive integer id' },
    ]);
  }
  const after = args.after ?? undefined;
  if (after !== undefined && (!Number.isSafeInteger(after) || after < 0)) {
    throw new AppError('BAD_USER_INPUT', 'after must be a sequence (0 or more)', [{ field: 'after', message: 'must be 0 or more' }]);
  }
  if (!(await context.services.trainers.exists(trainerId))) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
  const events = await context.services.events.subscribe(trainerId, {
    onOverflow: () => context.connection?.drop('Too slow: events piled up unread'),
    pace: () => context.connection?.writable(),
    after,
  });
  if (!events) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
  context.connection?.track(events);
  return events;
}

@Resolver()
export class CreatureEventsResolver {
  @Subscription(() => CreatureEvent, {
    description:
      "Changes to one trainer's creatures as they happen, made through any instance; with `after`, first those the client missed.",
    subscribe: subscribeToCreatureEvents,
  })
  creatureEvents(
    @Root() message: CreatureEventMessage | Expired,
    @Args() _args: CreatureEventsArgs,
    @Ctx() context: GraphQLContext,
  ): CreatureEvent {
    // What it missed was pruned while it replayed: the subscription ends with this error.
    if (isExpired(message)) {
      throw expiredError();
    }
    // The subscription's context serves every event (one at a time): nothing read for an earlier one is reused.
    context.loaders.forget();
    return fromMessage(message);
  }
}
