import { Args, ArgsType, Ctx, Field, ID, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import { IsEntityId, parseId } from '../common/validation';
import { AppError } from '../errors';
import type { GraphQLContext } from '../graphql/context';
import { CreatureEvent, fromMessage, type CreatureEventMessage } from './creature-event';

@ArgsType()
export class CreatureEventsArgs {
  @Field(() => ID)
  @IsEntityId()
  trainerId!: string;
}

/**
 * `creatureEvents(trainerId)`: any authenticated trainer may follow any trainer's creatures. The
 * checks run once, when the subscription starts (type-graphql validates arguments per event, so
 * the id is checked here, before anything is subscribed).
 */
async function subscribeToCreatureEvents({ args, context }: SubscribeResolverData<unknown, CreatureEventsArgs, GraphQLContext>) {
  await context.auth.requireViewer();
  const trainerId = parseId(args.trainerId);
  if (trainerId === undefined) {
    throw new AppError('BAD_USER_INPUT', 'trainerId must be a trainer id', [
      { field: 'trainerId', message: 'must be a positive integer id' },
    ]);
  }
  if (!(await context.services.trainers.exists(trainerId))) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
  const queue = await context.services.events.subscribe(
    trainerId,
    () => context.connection?.drop('Too slow: events piled up unread'),
    () => context.connection?.writable(),
  );
  if (!queue) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
  context.connection?.track(queue);
  return queue;
}

@Resolver()
export class CreatureEventsResolver {
  @Subscription(() => CreatureEvent, {
    description: "Changes to one trainer's creatures as they happen, made through any instance.",
    subscribe: subscribeToCreatureEvents,
  })
  creatureEvents(@Root() message: CreatureEventMessage, @Args() _args: CreatureEventsArgs, @Ctx() context: GraphQLContext): CreatureEvent {
    // The subscription's context serves every event (one at a time): nothing read for an earlier one is reused.
    context.loaders.forget();
    return fromMessage(message);
  }
}
