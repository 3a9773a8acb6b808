import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, type MiddlewareFn } from 'type-graphql';
import { unavailableAsAppError } from '../db/errors';
import { AuthResolver } from '../auth/auth.resolver';
import { validateOrThrow } from '../common/validation';
import { CreatureResolver } from '../creatures/creature.resolver';
import { TrainerPageResolver, TrainerResolver } from '../trainers/trainer.resolver';
import { authChecker } from './auth-checker';
import { DateTimeISO } from './scalars';

const resolvers = [TrainerResolver, TrainerPageResolver, CreatureResolver, AuthResolver] as const;

/**
 * See unavailableAsAppError: every resolver's database errors, mapped where they still have their
 * code. The object types are declared with `simpleResolvers`: their plain fields only read a
 * property, so they skip middlewares (a wrapper per field per item cost measurable CPU).
 */
const databaseErrors: MiddlewareFn = async (_action, next) => {
  try {
    return (await next()) as unknown;
  } catch (error) {
    throw unavailableAsAppError(error);
  }
};

export function buildGraphQLSchema(): Promise<GraphQLSchema> {
  return buildSchema({
    resolvers,
    authChecker,
    globalMiddlewares: [databaseErrors],
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
    // Every resolver takes an @ArgsType class, so field paths in errors read `input.level`, `limit`.
    validateFn: async (value: unknown) => {
      if (value !== null && typeof value === 'object') await validateOrThrow(value);
    },
  });
}

/** The SDL committed as schema.graphql, in the resolvers' declaration order (as clients have always read it). */
export function printSchemaSDL(schema: GraphQLSchema): string {
  return `${printSchema(schema)}\n`;
}
