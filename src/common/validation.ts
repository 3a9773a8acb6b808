import { registerDecorator, validate, type ValidationError, type ValidationOptions } from 'class-validator';
import { AppError, type FieldError } from '../errors';

export const MAX_ID = 2147483647;
const ID_PATTERN = /^[1-9]\d{0,9}$/;
const CONTROL_CHARS = /[\u0000-\u001F\u007F]/;

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

/** Text whose length after trimming is within bounds (counted in code points) and holds no control characters. */
export function IsTrimmedText(min: number, max: number, options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isTrimmedText',
      target: target.constructor,
      propertyName: String(propertyName),
      options: {
        message: `must be ${min} to ${max} characters after trimming, without control characters`,
        ...options,
      },
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'string' || CONTROL_CHARS.test(value)) return false;
          const length = [...value.trim()].length;
          return length >= min && length <= max;
        },
      },
    });
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
