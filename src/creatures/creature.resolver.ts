import { Args, Authorized, Ctx, FieldResolver, Mutation, Query, Resolver, Root } from 'type-graphql';
import { IdArgs } from '../common/args';
import { parseId } from '../common/validation';
import { AppError } from '../errors';
import type { GraphQLContext } from '../graphql/context';
import type { DirectFields } from '../graphql/field-resolvers';
import { Viewer } from '../graphql/viewer.decorator';
import { Trainer } from '../trainers/trainer.entity';
import { Creature } from './creature.entity';
import { CreateCreatureArgs, UpdateCreatureArgs } from './creature.inputs';

@Resolver(() => Creature)
export class CreatureResolver {
  // Not @Authorized(), which would read the caller before this read starts: the caller is
  // checked alongside, like trainer(id) (RequestAuth.alongside).
  @Query(() => Creature, { nullable: true, description: 'A creature by id, or null when there is none.' })
  creature(@Args() { id }: IdArgs, @Ctx() ctx: GraphQLContext): Promise<Creature | null> {
    return ctx.loaders.creatureById(parseId(id)!);
  }

  @Authorized()
  @Mutation(() => Creature, { description: 'Create a creature for trainerId, which must be the authenticated trainer.' })
  createCreature(
    @Args() { trainerId, input }: CreateCreatureArgs,
    @Viewer() viewer: Trainer,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Creature> {
    return ctx.services.creatures.create(viewer, parseId(trainerId)!, input);
  }

  @Authorized()
  @Mutation(() => Creature, { description: "Rename or re-level one of the authenticated trainer's creatures; returns it as it now is." })
  updateCreature(@Args() { id, input }: UpdateCreatureArgs, @Viewer() viewer: Trainer, @Ctx() ctx: GraphQLContext): Promise<Creature> {
    return ctx.services.creatures.update(viewer, parseId(id)!, input);
  }

  @Authorized()
  @Mutation(() => Creature, { description: "Delete one of the authenticated trainer's creatures; returns it as it was." })
  deleteCreature(@Args() { id }: IdArgs, @Viewer() viewer: Trainer, @Ctx() ctx: GraphQLContext): Promise<Creature> {
    return ctx.services.creatures.delete(viewer, parseId(id)!);
  }

  @FieldResolver(() => Trainer)
  async trainer(@Root() creature: Creature, @Ctx() ctx: GraphQLContext): Promise<Trainer> {
    // A deleted trainer's last events carry it as it was.
    if (creature.trainer) return creature.trainer;
    const trainer = await ctx.loaders.trainer(creature.trainerId);
    if (!trainer) throw new AppError('NOT_FOUND', `Trainer ${creature.trainerId} no longer exists`);
    return trainer;
  }
}

/** Every field resolver of Creature, called directly for each creature of a list (see answerDirectly). */
const creatureFields = new CreatureResolver();
export const CREATURE_DIRECT_FIELDS: DirectFields<Creature> = {
  trainer: (creature, _args, ctx) => creatureFields.trainer(creature, ctx),
};
