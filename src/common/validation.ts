import { registerDecorator, validate, type ValidationError, type ValidationOptions } from 'class-validator';
import { AppError, type FieldError } from '../errors';
import { EMAIL_PATTERN, matches, MAX_EMAIL, MAX_PASSWORD, MIN_PASSWORD, namePattern, PASSWORD_PATTERN } from './rules';

/**
 * The largest id the API accepts and shows: 2^53 - 1, the largest integer a JavaScript number
 * (and a JSON number in most clients) holds exactly. The columns are BIGINT (see the BigIds
 * migration); only plain SQL can write a larger one, and such rows are not supported (their ids
 * would come out rounded).
 */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
const ID_PATTERN = /^[1-9]\d{0,15}$/;

/** A positive integer id up to MAX_ID, from a GraphQL ID (string) or a number; undefined when malformed. */
export function parseId(value: unknown): number | undefined {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !ID_PATTERN.test(text)) return undefined;
  const id = Number(text);
  return id <= MAX_ID ? id : undefined;
}

export function IsEntityId(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isEntityId',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: `must be a positive integer id (1..${MAX_ID})`, ...options },
      validator: { validate: (value: unknown) => parseId(value) !== undefined },
    });
}

function textRule(name: string, message: string, test: (value: string) => boolean, options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message, ...options },
      validator: { validate: (value: unknown) => typeof value === 'string' && test(value) },
    });
}

export const NICKNAME_RULE = 'must be 3 to 32 characters of A-Z a-z 0-9 _ . -';

export const nameRule = (max: number): string =>
  `must be 1 to ${max} characters once the spaces around it are trimmed, without control, format or invisible characters or variation selectors, and not start with a combining mark`;

/** A name (see namePattern): 1..max characters once trimmed, nothing hidden, no combining mark first. Stored trimmed, in NFC. */
export function IsName(max: number, options?: ValidationOptions): PropertyDecorator {
  return textRule('isName', nameRule(max), (value) => matches(namePattern(max), value), options);
}

export const EMAIL_RULE = `must be a valid email address (as HTML forms accept them, with a dot in the domain) of at most ${MAX_EMAIL} characters`;

/** An email address (see EMAIL_PATTERN); stored lower-cased. */
export function IsEmailAddress(options?: ValidationOptions): PropertyDecorator {
  return textRule('isEmailAddress', EMAIL_RULE, (value) => value.length <= MAX_EMAIL && matches(EMAIL_PATTERN, value), options);
}

export const PASSWORD_RULE = `must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters, without control characters or bidi overrides`;

/** A password of 8..128 characters (code points) without the characters of PASSWORD_FORBIDDEN. */
export function IsPassword(options?: ValidationOptions): PropertyDecorator {
  return textRule(
    'isPassword',
    PASSWORD_RULE,
    (value) => {
      const length = [...value].length;
      return length >= MIN_PASSWORD && length <= MAX_PASSWORD && matches(PASSWORD_PATTERN, value);
    },
    options,
  );
}

function flatten(errors: readonly ValidationError[], prefix: string, out: FieldError[]): FieldError[] {
  for (const error of errors) {
    const field = [prefix, error.property].filter(Boolean).join('.') || 'input';
    const messages = Object.values(error.constraints ?? {});
    if (messages.length > 0) out.push({ field, message: messages.join('; ') });
    if (error.children?.length) flatten(error.children, field, out);
  }
  return out;
}

/** Validates a decorated object; throws BAD_USER_INPUT listing every offending field by its path. */
export async function validateOrThrow(value: object, prefix = ''): Promise<void> {
  const errors = await validate(value, { forbidUnknownValues: true, validationError: { target: false, value: false } });
  if (errors.length === 0) return;
  const fields = flatten(errors, prefix, []);
  const summary = fields.map((f) => `${f.field} ${f.message}`).join('; ');
  throw new AppError('BAD_USER_INPUT', `Invalid input: ${summary}`, fields);
}
