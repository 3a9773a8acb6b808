import { getArgumentValues, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql';
import {
  Args,
  Authorized,
  Ctx,
  FieldResolver,
  Info,
  Int,
  Mutation,
  Query,
  Resolver,
  Root,
  UseMiddleware,
  type MiddlewareFn,
} from 'type-graphql';
import { CursorPageArgs, IdArgs, PageArgs } from '../common/args';
import { parseId } from '../common/validation';
import { Creature } from '../creatures/creature.entity';
import type { GraphQLContext } from '../graphql/context';
import { onlyNestedField, selectedFieldNames, selectedNames, selectsField } from '../graphql/selection';
import type { CreaturePageRequest } from '../graphql/loaders';
import { CREATURE_FIELDS, isCreatureField, type CreatureField } from '../creatures/creature.queries';
import { CreaturePage } from '../creatures/creature-page.type';
import { Viewer } from '../graphql/viewer.decorator';
import { checkArguments, withArguments, type DirectFields } from '../graphql/field-resolvers';
import { TrainerPage } from './trainer-page.type';
import { isTrainerField, type TrainerField } from './trainer.columns';
import { conditionsOf, NicknameArgs, TrainersArgs } from './trainer-filter';
import { Trainer } from './trainer.entity';
import { ChangePasswordArgs, DeleteMeArgs, RegisterTrainerArgs, UpdateMeArgs } from './trainer.inputs';
import { visibleEmail } from './trainer.service';

const creatureFieldLists = new WeakMap<ReadonlySet<string>, CreatureField[]>();

/** The creature properties a `creatures` field selects (its `trainer` field reads trainerId, always read). */
function creatureFields(info: GraphQLResolveInfo): CreatureField[] {
  return creatureFieldsOf(selectedFieldNames(info));
}

function creatureFieldsOf(names: ReadonlySet<string>): CreatureField[] {
  let fields = creatureFieldLists.get(names);
  if (!fields) {
    fields = [...names].filter(isCreatureField).sort();
    creatureFieldLists.set(names, fields);
  }
  return fields;
}

/**
 * The creature pages a page of trainers will ask for, when the document selects
 * `items { creatures(...) }` once, without directives, with valid arguments: they are then read
 * at the same time as the trainers (Loaders.trainerPage). Otherwise undefined, and each
 * `creatures` field reads (and checks its arguments) on its own.
 */
async function creaturesToReadAhead(info: GraphQLResolveInfo): Promise<CreaturePageRequest | undefined> {
  const node = onlyNestedField(info, 'items', 'creatures');
  if (!node) return undefined;
  const field = (info.schema.getType('Trainer') as GraphQLObjectType).getFields().creatures;
  let args: PageArgs;
  try {
    args = Object.assign(new PageArgs(), getArgumentValues(field, node, info.variableValues));
  } catch {
    return undefined;
  }
  try {
    await checkArguments(args);
  } catch {
    // The field itself reports them, with its path.
    return undefined;
  }
  return { limit: args.limit, offset: args.offset, fields: creatureFieldsOf(selectedNames([node], info.fragments)) };
}

const trainerFieldLists = new WeakMap<ReadonlySet<string>, TrainerField[] | undefined>();

/**
 * The trainer properties a page's `items` select (through fragments), when the document
 * selects `items` once, without directives: the page reads only those columns. Otherwise
 * undefined (every column), also when their creatures select `trainer`, which then answers
 * from the page's trainers read whole. `creatures` and `creaturesOwned` need no column of their own.
 */
function trainerFieldsOf(info: GraphQLResolveInfo): TrainerField[] | undefined {
  const items = onlyNestedField(info, 'items');
  if (!items) return undefined;
  const names = selectedNames([items], info.fragments);
  if (names.has('creatures')) {
    const creatures = onlyNestedField(info, 'items', 'creatures');
    if (!creatures || selectedNames([creatures], info.fragments).has('trainer')) return undefined;
  }
  if (!trainerFieldLists.has(names)) trainerFieldLists.set(names, [...names].filter(isTrainerField).sort());
  return trainerFieldLists.get(names);
}

const countRegistration: MiddlewareFn<GraphQLContext> = async ({ context }, next) => {
  await context.services.trainers.countRegistration(context.clientIp);
  return (await next()) as unknown;
};

/**
 * What @Authorized() does, without a round trip of its own: a request without a valid token is
 * refused before its arguments are looked at (the token alone, no database), and the session is
 * checked while the field resolves, in the statement of its own reads (RequestAuth.alongside).
 * A caller whose session has ended is refused (UNAUTHENTICATED) whatever the field did.
 */
const callerAlongside: MiddlewareFn<GraphQLContext> = ({ context }, next) => context.auth.alongside(() => next() as Promise<unknown>);

@Resolver(() => Trainer)
export class TrainerResolver {
  @Authorized()
  @Query(() => Trainer, { description: 'The authenticated trainer.' })
  me(@Viewer() viewer: Trainer): Trainer {
    return viewer;
  }

  // Not @Authorized(), which would read the caller before this read starts: the loader reads
  // the trainer alongside the caller check, in one statement (RequestAuth.alongside).
  @Query(() => Trainer, { nullable: true, description: 'A trainer by id, or null when there is none.' })
  trainer(@Args() { id }: IdArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo): Promise<Trainer | null> {
    return ctx.loaders.trainerById(parseId(id)!, { withCount: selectsField(info, 'creaturesOwned') });
  }

  // Not @Authorized(), which would read the caller before the page's read starts (two round
  // trips): the caller is checked alongside, in the page's own statement (callerAlongside).
  @UseMiddleware(callerAlongside)
  @Query(() => TrainerPage, { description: 'A page of trainers. limit 1..100, offset >= 0.' })
  async trainers(
    @Args() { limit, offset, after, filter }: TrainersArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ): Promise<TrainerPage> {
    const page = await ctx.loaders.trainerPage(limit, offset, {
      withCounts: selectsField(info, 'items', 'creaturesOwned'),
      // Null (a client's first page of `fetchMore`) is the first page, as when left out.
      after: after ?? undefined,
      filter: conditionsOf(filter),
      creatures: await creaturesToReadAhead(info),
      fields: trainerFieldsOf(info),
    });
    return TrainerPage.of(page);
  }

  // Like trainer(id): the caller is checked in the read's own statement (RequestAuth.alongside).
  @Query(() => Trainer, { nullable: true, description: 'A trainer by its nickname (case-insensitive), or null.' })
  trainerByNickname(
    @Args() { nickname }: NicknameArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ): Promise<Trainer | null> {
    return ctx.loaders.trainerByNickname(nickname, { withCount: selectsField(info, 'creaturesOwned') });
  }

  @Mutation(() => Trainer, { description: 'Create a trainer account. Needs no token.' })
  // Runs before type-graphql validates the arguments: invalid attempts count too.
  @UseMiddleware(countRegistration)
  async registerTrainer(@Args() { input }: RegisterTrainerArgs, @Ctx() ctx: GraphQLContext): Promise<Trainer> {
    const trainer = await ctx.services.trainers.register(input);
    ctx.selfIds.add(trainer.id);
    return trainer;
  }

  @Authorized()
  @Mutation(() => Trainer, { description: "Change the authenticated trainer's profile; returns it as it now is (with its email)." })
  updateMe(@Args() { input }: UpdateMeArgs, @Ctx() ctx: GraphQLContext): Promise<Trainer> {
    return ctx.services.accounts.update(ctx.auth, input, ctx.log);
  }

  @Authorized()
  @Mutation(() => Boolean, {
    description: "Change the authenticated trainer's password; every other session of the trainer ends at once. Returns true.",
  })
  async changePassword(@Args() { currentPassword, newPassword }: ChangePasswordArgs, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await ctx.services.accounts.changePassword(ctx.auth, currentPassword, newPassword, ctx.clientIp, ctx.log);
    return true;
  }

  @Authorized()
  @Mutation(() => Boolean, { description: 'Delete the authenticated trainer with its creatures and sessions. Returns true.' })
  async deleteMe(@Args() { password }: DeleteMeArgs, @Ctx() ctx: GraphQLContext): Promise<boolean> {
    await ctx.services.accounts.deleteMe(ctx.auth, password, ctx.clientIp, ctx.log);
    return true;
  }

  @FieldResolver(() => String, {
    nullable: true,
    description:
      'Visible only to the trainer itself (including the answers of registerTrainer and authenticate); null for every other caller.',
  })
  async email(@Root() trainer: Trainer, @Ctx() ctx: GraphQLContext): Promise<string | null> {
    // The answers to registerTrainer and authenticate speak to the trainer they return.
    const readerId = ctx.selfIds.has(trainer.id) ? trainer.id : (await ctx.auth.viewer())?.id;
    return visibleEmail(trainer, readerId);
  }

  @FieldResolver(() => Int, { description: 'How many creatures this trainer owns.' })
  creaturesOwned(@Root() trainer: Trainer, @Ctx() ctx: GraphQLContext): number | Promise<number> {
    return ctx.loaders.creaturesOwned(trainer);
  }

  @FieldResolver(() => [Creature], { description: "This trainer's creatures, oldest first (by id)." })
  creatures(
    @Root() trainer: Trainer,
    @Args() { limit, offset }: PageArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ): Creature[] | Promise<Creature[]> {
    const page = ctx.loaders.creaturePage(trainer.id, { limit, offset, fields: creatureFields(info) });
    // Read ahead with a page of trainers: answered at once, without a promise per trainer.
    return page instanceof Promise ? page.then(({ items }) => items) : page.items;
  }

  @FieldResolver(() => CreaturePage, {
    description: "This trainer's creatures, oldest first (by id), from the start or after a cursor; limit 1..100.",
  })
  creaturePage(
    @Root() trainer: Trainer,
    @Args() { limit, after }: CursorPageArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ): CreaturePage | Promise<CreaturePage> {
    const items = onlyNestedField(info, 'items');
    const fields = items ? creatureFieldsOf(selectedNames([items], info.fragments)) : CREATURE_FIELDS;
    return ctx.loaders.creaturePage(trainer.id, { limit, after: after ?? undefined, fields });
  }
}

/**
 * Every field resolver of Trainer, called directly for each trainer of a list (see
 * answerDirectly): the methods above, with their (flat) arguments checked by checkArguments, the
 * validateFn type-graphql is given.
 */
const trainerFields = new TrainerResolver();
export const TRAINER_DIRECT_FIELDS: DirectFields<Trainer> = {
  email: (trainer, _args, ctx) => trainerFields.email(trainer, ctx),
  creaturesOwned: (trainer, _args, ctx) => trainerFields.creaturesOwned(trainer, ctx),
  creatures: (trainer, args, ctx, info) => withArguments(PageArgs, args, (page) => trainerFields.creatures(trainer, page, ctx, info)),
  creaturePage: (trainer, args, ctx, info) =>
    withArguments(CursorPageArgs, args, (page) => trainerFields.creaturePage(trainer, page, ctx, info)),
};

@Resolver(() => TrainerPage)
export class TrainerPageResolver {
  @FieldResolver(() => Int, { description: 'Number of trainers matching the filter (every trainer without one), over all pages.' })
  totalCount(@Root() page: TrainerPage): Promise<number> {
    return page.total();
  }
}
