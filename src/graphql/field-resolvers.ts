import { IdArgs } from '../common/args';
import { parseId, validateOrThrow } from '../common/validation';
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
