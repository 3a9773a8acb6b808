import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver';
import { CREATURE_DIRECT_FIELDS, CreatureResolver } from '../creatures/creature.resolver';
import { CreatureEventsResolver } from '../events/creature-events.resolver';
import { TRAINER_DIRECT_FIELDS, TrainerPageResolver, TrainerResolver } from '../trainers/trainer.resolver';
import { authChecker } from './auth-checker';
import { answerDirectly, checkArguments } from './field-resolvers';
import { DateTimeISO } from './scalars';

const resolvers = [TrainerResolver, TrainerPageResolver, CreatureResolver, AuthResolver, CreatureEventsResolver] as const;

export async function buildGraphQLSchema(): Promise<GraphQLSchema> {
  const schema = await buildSchema({
    resolvers,
    authChecker,
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
    // Every resolver takes an @ArgsType class, so field paths in errors read `input.level`, `limit`.
    validateFn: (value) => checkArguments(value),
    // type-graphql insists on one; the only subscription brings its own `subscribe` (the event bus).
    pubSub: {
      publish: () => undefined,
      subscribe: () => {
        throw new Error('Subscriptions subscribe through their own `subscribe` option');
      },
    },
  });
  // Types that come in lists: their field resolvers run once per item.
  answerDirectly(schema, 'Trainer', TrainerResolver, TRAINER_DIRECT_FIELDS);
  answerDirectly(schema, 'Creature', CreatureResolver, CREATURE_DIRECT_FIELDS);
  return schema;
}

/** The SDL committed as schema.graphql, in the resolvers' declaration order (as clients have always read it). */
export function printSchemaSDL(schema: GraphQLSchema): string {
  return `${printSchema(schema)}\n`;
}
