import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { validateOrThrow } from '../common/validation';
import type { FieldError } from '../errors';

/*
 * Two validators: JSON bodies are taken as typed (no coercion, unknown fields rejected), while
 * path and query strings are coerced to integers, but only from plain decimal text: Ajv alone
 * would also accept "1e3", "" or " 7".
 */
/** Plain decimal, no leading zeros (as GraphQL ids): `7`, `-1`, `0`; not `007`, `1e3`, `+1`, ` 7`. */
const DECIMAL = /^(0|-?[1-9]\d*)$/;

interface ObjectSchema {
  properties?: Record<string, { type?: string }>;
}

function decimalIntegers(schema: ObjectSchema, validate: ValidateFunction): ValidateFunction {
  const integerKeys = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([key]) => key);
  const wrapped = ((data: Record<string, unknown> | undefined) => {
    const errors: ErrorObject[] = [];
    for (const key of integerKeys) {
      const value = data?.[key];
      if (value !== undefined && (typeof value !== 'string' || !DECIMAL.test(value))) {
        errors.push({
          instancePath: `/${key}`,
          schemaPath: `#/properties/${key}/type`,
          keyword: 'type',
          params: { type: 'integer' },
          // A parameter repeated (`?limit=3&limit=4`) comes as an array: which value was meant is unknown.
          message: Array.isArray(value) ? 'is given more than once' : 'must be a decimal integer, without leading zeros',
        });
      }
    }
    if (errors.length > 0) {
      wrapped.errors = errors;
      return false;
    }
    const valid = validate(data);
    wrapped.errors = validate.errors;
    return valid;
  }) as ValidateFunction;
  return wrapped;
}

/** A validator compiler for one app's REST routes (each app gets its own Ajv instances). */
export function createRestValidatorCompiler(): FastifySchemaCompiler<ObjectSchema> {
  const options = { useDefaults: true, removeAdditional: false, allErrors: true, strict: false } as const;
  // verbose: errors carry their schema, whose description words a broken pattern or length.
  const bodyAjv = new Ajv({ ...options, coerceTypes: false, verbose: true });
  const textAjv = new Ajv({ ...options, coerceTypes: true });
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv.compile(schema) : decimalIntegers(schema, textAjv.compile(schema)));
}

/** A body that passed its schema, checked by the same value rules as GraphQL: copied into the input class and checked by class-validator. */
export async function validInput<T extends object>(Input: new () => T, body: unknown): Promise<T> {
  const input = Object.assign(new Input(), body);
  await validateOrThrow(input);
  return input;
}

const RULES_IN_DESCRIPTION = new Set(['pattern', 'minLength', 'maxLength']);

/** Ajv's errors as the catalogue's `fields`: `level`, `trainerId`, `nickname`... */
export function validationFields(errors: readonly Partial<ErrorObject>[]): FieldError[] {
  const byField = new Map<string, string[]>();
  for (const error of errors) {
    const params = (error.params ?? {}) as { missingProperty?: string; additionalProperty?: string };
    const base = (error.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    let field = base;
    let message = error.message ?? 'is invalid';
    if (params.missingProperty) {
      field = [base, params.missingProperty].filter(Boolean).join('.');
      message = 'is required';
    } else if (params.additionalProperty) {
      field = [base, params.additionalProperty].filter(Boolean).join('.');
      message = 'is not a known field';
    } else if (base === '' && error.keyword === 'type' && (error.data === undefined || error.data === null)) {
      // A route that takes a JSON body, called without one or with `null` (Ajv would say "must be object").
      message = 'is required: send a JSON object';
    } else if (RULES_IN_DESCRIPTION.has(error.keyword ?? '') && typeof error.parentSchema?.description === 'string') {
      // Not "must match pattern <a page of character ranges>": the rule in words.
      message = error.parentSchema.description.replace(/;.*$/, '');
    }
    field ||= 'body';
    byField.set(field, [...(byField.get(field) ?? []), message]);
  }
  return [...byField].map(([field, messages]) => ({ field, message: [...new Set(messages)].join('; ') }));
}
