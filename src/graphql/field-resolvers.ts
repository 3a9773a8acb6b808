import { getNamedType, isInputObjectType, isObjectType, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';
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
  for (const [name, item] of Object.entries(value)) {
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
 * pattern (parseId). class-validator took about 6 KB and a sort of its metadata per
 * `trainer(id)` (a sampling allocation profile); ids are text, so checkArguments cannot remember
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

type Resolve = (root: never, args: Record<string, unknown>, context: GraphQLContext, info: GraphQLResolveInfo) => unknown;

/** Plain resolvers by type and field name. */
export type FieldResolvers = Record<string, Record<string, Resolve>>;

/**
 * A resolver that takes its arguments as an instance of the @ArgsType class `Args`, checked as
 * type-graphql checks them (checkArguments): at once when the same arguments were valid before.
 * Only for classes of scalar fields (installFieldResolvers refuses fields with input objects).
 */
export function withArgs<Root, Args extends object>(
  Args: new () => Args,
  resolve: (root: Root, args: Args, context: GraphQLContext, info: GraphQLResolveInfo) => unknown,
): Resolve {
  return (root: Root, args, context, info) => {
    const instance = Object.assign(new Args(), args);
    const checked = checkArguments(instance);
    return checked ? checked.then(() => resolve(root, instance, context, info)) : resolve(root, instance, context, info);
  };
}

/**
 * Puts plain resolvers in place of type-graphql's for fields resolved once per item of a list (a
 * page's 100 trainers, their 1,000 creatures). type-graphql's wrapper makes about ten objects
 * per call (the sorted parameter list, the resolver data, a validation promise, Promise.all, ...);
 * with 50 pages in flight they live across the wait for the next statement, so the young
 * generation promotes them and the old one collects them. Without it the nested page took about
 * 17% less CPU (bench/README.md, "The nested page and the lists").
 *
 * The fields keep their type, arguments, defaults and description from the decorators; a field
 * listed here must carry no middleware and no @Authorized (what type-graphql would have added),
 * and takes its arguments through withArgs.
 */
export function installFieldResolvers(schema: GraphQLSchema, resolvers: FieldResolvers): void {
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (!isObjectType(type)) throw new Error(`${typeName} is not an object type of the schema`);
    const own = type.getFields();
    for (const [name, resolve] of Object.entries(fields)) {
      const field = own[name];
      if (!field) throw new Error(`${typeName}.${name} is not a field of the schema`);
      if (field.args.some((arg) => isInputObjectType(getNamedType(arg.type)))) {
        throw new Error(`${typeName}.${name} takes an input object: leave it to type-graphql`);
      }
      field.resolve = resolve as typeof field.resolve;
    }
  }
}
