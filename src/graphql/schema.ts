import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver';
import { CreatureResolver } from '../creatures/creature.resolver';
import { CreatureEventsResolver } from '../events/creature-events.resolver';
import { TrainerPageResolver, TrainerResolver } from '../trainers/trainer.resolver';
import { authChecker } from './auth-checker';
import { checkArguments } from './field-resolvers';
import { DateTimeISO } from './scalars';

const resolvers = [TrainerResolver, TrainerPageResolver, CreatureResolver, AuthResolver, CreatureEventsResolver] as const;

export async function buildGraphQLSchema(): Promise<GraphQLSchema> {
  return buildSchema({
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
}

/** The SDL committed as schema.graphql, in the resolvers' declaration order (as clients have always read it). */
export function printSchemaSDL(schema: GraphQLSchema): string {
  return `${printSchema(schema)}\n`;
}
