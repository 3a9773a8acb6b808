import { isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { getMetadataStorage } from 'type-graphql';
import { IdArgs } from '../common/args';
import { parseId, validateOrThrow } from '../common/validation';
import type { GraphQLContext } from './context';
import { MAX_VERDICTS } from './limits';

/**
 * Argument objects found valid, by class and key: the 100 `creatures(limit: 10)` fields of a
 * page carry the same arguments, and class-validator took measurable CPU checking each one
 * (node --cpu-prof). Only small objects of numbers, booleans and nulls are remembered (no text:
 * a password or an email must not outlive its request), at most MAX_VERDICTS per class.
 */
const validArguments = new WeakMap<object, Set<string>>();
const MAX_VERDICT_KEY = 256;

/** A key for an object that holds no text (nested objects and arrays allowed), else undefined. */
function textFreeKey(value: object): string | undefined {
  // Flat objects of numbers, booleans and nulls (page arguments) without JSON.stringify.
  let flat = '';
  // for...in rather than Object.entries: no array per call (a page's 100 `creatures` fields each ask).
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const item = (value as Record<string, unknown>)[name];
    if (typeof item === 'number' || typeof item === 'boolean' || item === null) flat += `${name}:${String(item)},`;
    else if (typeof item === 'string') return undefined;
    else if (item !== undefined) return jsonKey(value);
  }
  return flat.length > MAX_VERDICT_KEY ? undefined : flat;
}

/** The JSON of a value that holds no text, else undefined (it starts with `{` or `[`, a flat key never does). */
function jsonKey(value: object): string | undefined {
  let text = false;
  const key = JSON.stringify(value, (_name, item: unknown) => {
    if (typeof item === 'string') text = true;
    return item;
  });
  return text || key.length > MAX_VERDICT_KEY ? undefined : key;
}

/**
 * Argument classes whose valid values are known at once, without class-validator: an id is one
 * pattern (parseId). class-validator allocates and sorts its metadata for every
 * `trainer(id)`; ids are text, so checkArguments cannot remember
 * them. A value these refuse still goes through class-validator, which names the field and rule.
 */
const quickChecks = new Map<unknown, (value: never) => boolean>([[IdArgs, ({ id }: IdArgs) => parseId(id) !== undefined]]);

/**
 * Validates an @ArgsType instance with its class-validator rules (BAD_USER_INPUT naming each
 * field). Returns undefined, without any promise, when the same arguments of the same class were
 * found valid before; a promise otherwise.
 */
export function checkArguments(value: unknown): Promise<void> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (quickChecks.get(value.constructor)?.(value as never)) return undefined;
  const key = textFreeKey(value);
  const known = validArguments.get(value.constructor);
  if (key !== undefined && known?.has(key)) return undefined;
  return validateOrThrow(value).then(() => {
    if (key === undefined) return;
    if (!known) validArguments.set(value.constructor, new Set([key]));
    else if (known.size < MAX_VERDICTS) known.add(key);
  });
}

/**
 * `args` as an instance of the @ArgsType class `kind`, checked by the validateFn type-graphql is
 * given (checkArguments), then given to `run`: at once when the same arguments were found valid
 * before, else once they are. For flat argument classes only (numbers, strings): unlike
 * type-graphql, it does not make instances of nested input classes, which their @ValidateNested
 * rules need.
 */
export function withArguments<A extends object, R>(kind: new () => A, args: object, run: (checked: A) => R): R | Promise<R> {
  const value = Object.assign(new kind(), args);
  const checking = checkArguments(value);
  return checking ? checking.then(() => run(value)) : run(value);
}

/**
 * Field resolvers of an object type that are called once per item of a list (a page's 100
 * trainers), answered by these functions directly instead of through type-graphql's wrapper of
 * each call: that wrapper sorts the parameter list, checks the arguments in an async function and
 * gathers the parameters with Promise.all on every call, which made a large share of a nested
 * page's allocations (a sampling heap profile under load) and so of its garbage collection. The
 * resolver class still declares each field (type, arguments, description) with @FieldResolver,
 * and each function calls that method: the code that answers is the same.
 */
export type DirectFields<TSource> = Record<string, GraphQLFieldResolver<TSource, GraphQLContext, Record<string, unknown>>>;

/**
 * Puts `fields` in place of the resolvers type-graphql made for those fields of `typeName`,
 * declared by `resolverClass`. Refuses a field that does not exist or whose declaration has
 * @Authorized or @UseMiddleware, which only type-graphql's wrapper applies (as it would any
 * global middleware; buildSchema is given none): start-up fails rather than a rule being skipped.
 */
export function answerDirectly<TSource>(
  schema: GraphQLSchema,
  typeName: string,
  resolverClass: abstract new (...args: never[]) => object,
  fields: DirectFields<TSource>,
): void {
  const type = schema.getType(typeName);
  if (!isObjectType(type)) throw new Error(`answerDirectly: no object type ${typeName}`);
  const defined = type.getFields();
  for (const [name, resolve] of Object.entries(fields)) {
    const declared = getMetadataStorage().fieldResolvers.find((it) => it.target === resolverClass && it.schemaName === name);
    if (!defined[name] || !declared) throw new Error(`answerDirectly: ${resolverClass.name} declares no field ${typeName}.${name}`);
    if (declared.roles !== undefined || (declared.middlewares?.length ?? 0) > 0) {
      throw new Error(
        `answerDirectly: ${typeName}.${name} has @Authorized or @UseMiddleware, which only type-graphql's own resolver applies`,
      );
    }
    defined[name].resolve = resolve as GraphQLFieldResolver<unknown, unknown>;
  }
}
