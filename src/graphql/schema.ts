import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver';
import { validateOrThrow } from '../common/validation';
import { CreatureResolver } from '../creatures/creature.resolver';
import { CreatureEventsResolver } from '../events/creature-events.resolver';
import { TrainerPageResolver, TrainerResolver } from '../trainers/trainer.resolver';
import { authChecker } from './auth-checker';
import { DateTimeISO } from './scalars';

const resolvers = [TrainerResolver, TrainerPageResolver, CreatureResolver, AuthResolver, CreatureEventsResolver] as const;

/**
 * Argument objects found valid, by class and JSON: the 100 `creatures(limit: 10)` fields of a
 * page carry the same arguments, and class-validator took measurable CPU checking each one
 * (node --cpu-prof). Only small objects of numbers, booleans and nulls are remembered (no text:
 * a password or an email must not outlive its request), at most MAX_VERDICTS per class.
 */
const validArguments = new WeakMap<object, Set<string>>();
const MAX_VERDICTS = 1000;
const MAX_VERDICT_KEY = 256;

/** The JSON of a value that holds no text (nested objects and arrays allowed), else undefined. */
function textFreeKey(value: object): string | undefined {
  let text = false;
  const key = JSON.stringify(value, (_name, item: unknown) => {
    if (typeof item === 'string') text = true;
    return item;
  });
  return text || key.length > MAX_VERDICT_KEY ? undefined : key;
}

async function validateArguments(value: unknown): Promise<void> {
  if (value === null || typeof value !== 'object') return;
  const key = textFreeKey(value);
  const known = validArguments.get(value.constructor);
  if (key !== undefined && known?.has(key)) return;
  await validateOrThrow(value);
  if (key === undefined) return;
  if (!known) validArguments.set(value.constructor, new Set([key]));
  else if (known.size < MAX_VERDICTS) known.add(key);
}

export function buildGraphQLSchema(): Promise<GraphQLSchema> {
  return buildSchema({
    resolvers,
    authChecker,
    scalarsMap: [{ type: Date, scalar: DateTimeISO }],
    // Every resolver takes an @ArgsType class, so field paths in errors read `input.level`, `limit`.
    validateFn: validateArguments,
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
