import { isEmail, registerDecorator, validate, type ValidationError, type ValidationOptions } from 'class-validator';
import { AppError, type FieldError } from '../errors';
import { codePoints, isCleanText, isNameText, isVisible, normalizeEmail, normalizeText } from './text';

export const MAX_ID = 2147483647;
const ID_PATTERN = /^[1-9]\d{0,9}$/;

/** A positive 32-bit integer id, from a GraphQL ID (string) or a number; undefined when malformed. */
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

function textRule(
  name: string,
  message: string,
  test: (value: string) => boolean,
  options?: ValidationOptions,
  clean: (value: string) => boolean = isCleanText,
): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message, ...options },
      validator: { validate: (value: unknown) => typeof value === 'string' && clean(value) && test(value) },
    });
}

/**
 * A name: its length once trimmed and NFC-normalised (as stored) is within bounds, in code points,
 * and it holds no control, format or invisible characters (isNameText).
 */
export function IsTrimmedText(min: number, max: number, options?: ValidationOptions): PropertyDecorator {
  return textRule(
    'isTrimmedText',
    `must be ${min} to ${max} visible characters after trimming, without control, format or invisible characters`,
    (value) => {
      const text = normalizeText(value);
      const length = codePoints(text);
      return length >= min && length <= max && isVisible(text);
    },
    options,
    isNameText,
  );
}

/** An email address of at most `max` characters as it will be stored (trimmed, NFC, lower-cased). */
export function IsEmailAddress(max: number, options?: ValidationOptions): PropertyDecorator {
  return textRule(
    'isEmailAddress',
    `must be a valid email address of at most ${max} characters`,
    (value) => {
      const email = normalizeEmail(value);
      return codePoints(email) <= max && isEmail(email);
    },
    options,
  );
}

/** A password of min..max characters without control characters (scrypt would ignore trailing NULs). */
export function IsPassword(min: number, max: number, options?: ValidationOptions): PropertyDecorator {
  return textRule(
    'isPassword',
    `must be ${min} to ${max} characters, without control characters`,
    (value) => codePoints(value) >= min && codePoints(value) <= max,
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
