import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { buildSchema, isEnumType, isInputObjectType, isNonNullType, isScalarType, type GraphQLInputType } from 'graphql';
import { nameKey, normalizeText } from '../../src/common/text';
import { Creature } from '../../src/creatures/creature.entity';
import { ERROR_STATUS } from '../../src/errors';
import { Trainer } from '../../src/trainers/trainer.entity';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { namedDrivers, type Driver, type Outcome } from '../helpers/drivers';
import { createTrainer, type TrainerFixture } from '../helpers/factories';

/*
 * Property-based fuzzing of both transports on both databases. Bodies come from the committed
 * openapi.json (what REST clients are generated from) and from schema.graphql's input types:
 * a body that follows every stated rule must be accepted; one that breaks a rule must be refused
 * with 400 BAD_USER_INPUT; and whatever arrives, the answer is a catalogue code, never a 5xx.
 */

const ROOT = join(__dirname, '..', '..');

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  enum?: string[];
}

const openapi = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: JsonSchema }> } }>>;
};
const bodySchema = (path: string) => openapi.paths[path].post.requestBody.content['application/json'].schema;
const REGISTER = bodySchema('/trainer');
const CREATE = bodySchema('/trainer/{trainerId}/creature');

const codePoints = (text: string) => [...text].length;

/** Whether a value follows a schema, by the keywords openapi.json uses (the rules as published). */
function follows(schema: JsonSchema, value: unknown): boolean {
  switch (schema.type) {
    case 'string':
      return (
        typeof value === 'string' &&
        (schema.enum === undefined || schema.enum.includes(value)) &&
        (schema.minLength === undefined || codePoints(value) >= schema.minLength) &&
        (schema.maxLength === undefined || codePoints(value) <= schema.maxLength) &&
        (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value))
      );
    case 'integer':
      return (
        Number.isInteger(value) &&
        (schema.minimum === undefined || (value as number) >= schema.minimum) &&
        (schema.maximum === undefined || (value as number) <= schema.maximum)
      );
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
      const record = value as Record<string, unknown>;
      const properties = schema.properties ?? {};
      if ((schema.required ?? []).some((key) => !(key in record))) return false;
      if (schema.additionalProperties === false && Object.keys(record).some((key) => !(key in properties))) return false;
      return Object.entries(record).every(([key, item]) => !(key in properties) || follows(properties[key], item));
    }
    default:
      return false;
  }
}

/** Text of every kind: ASCII, letters, spaces, marks, astral, hidden characters, lone surrogates. */
const anyText = (maxLength: number) =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'grapheme', maxLength }),
    fc.string({ unit: 'binary', maxLength }),
    fc.constantFrom(
      '',
      ' ',
      'a\u200Db',
      '\u3164',
      'Straẞe',
      'ﬀ',
      'Ｍｅｗ',
      'a\u202Eb',
      'x\u0000',
      '\uD800',
      'ash@example.com',
      ' ash@example.com',
    ),
  );

/** Values that follow a schema (strings from its pattern, then checked against all its keywords). */
function valid(schema: JsonSchema): fc.Arbitrary<unknown> {
  switch (schema.type) {
    case 'string': {
      if (schema.enum) return fc.constantFrom(...schema.enum);
      const sources = [anyText(schema.maxLength ?? 80)];
      if (schema.pattern) sources.push(fc.stringMatching(new RegExp(schema.pattern, 'u')));
      return fc.oneof(...sources).filter((text) => follows(schema, text));
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -(2 ** 31), max: schema.maximum ?? 2 ** 31 - 1 });
    case 'object': {
      const properties = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      return fc.record(Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, valid(property)])), {
        requiredKeys: Object.keys(properties).filter((key) => required.has(key)),
      });
    }
    default:
      throw new Error(`no generator for ${schema.type}`);
  }
}

/** A valid body with one rule broken: a field dropped, one added, or one value that breaks its schema. */
function broken(schema: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const breakers = Object.entries(properties).map(([key, property]) =>
    fc
      .tuple(
        valid(schema) as fc.Arbitrary<Record<string, unknown>>,
        fc.oneof(anyText(300), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue()),
      )
      .filter(([, value]) => !follows(property, value))
      .map(([body, value]) => ({ ...body, [key]: value })),
  );
  const dropped = (schema.required ?? []).map((key) =>
    (valid(schema) as fc.Arbitrary<Record<string, unknown>>).map((body) =>
      Object.fromEntries(Object.entries(body).filter(([k]) => k !== key)),
    ),
  );
  const extra = fc
    .tuple(valid(schema) as fc.Arbitrary<Record<string, unknown>>, fc.string({ minLength: 1, maxLength: 10 }), fc.jsonValue())
    .filter(([, key]) => !(key in properties) && key !== '__proto__')
    .map(([body, key, value]) => ({ ...body, [key]: value }));
  return fc.oneof(...breakers, ...dropped, extra);
}

/** Input values of a GraphQL input type, for its type only (the rules are left to chance). */
function ofGraphQLType(type: GraphQLInputType): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return ofGraphQLType(type.ofType);
  if (isEnumType(type)) return fc.constantFrom(...type.getValues().map((v) => v.name));
  if (isInputObjectType(type)) {
    const fields = type.getFields();
    return fc.record(Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, ofGraphQLType(field.type)])), {
      requiredKeys: Object.keys(fields).filter((key) => isNonNullType(fields[key].type) && fields[key].defaultValue === undefined),
    });
  }
  if (isScalarType(type) && type.name === 'Int') return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
  if (isScalarType(type)) return anyText(100);
  throw new Error(`no generator for ${String(type)}`);
}

const schemaGraphql = buildSchema(readFileSync(join(ROOT, 'schema.graphql'), 'utf8'));
const inputType = (name: string) => schemaGraphql.getType(name) as GraphQLInputType;

/** Anything a client could send as a body: JSON of any shape, with the field names it might guess. */
const anything = fc.oneof(
  fc.jsonValue(),
  fc.dictionary(
    fc.constantFrom('nickname', 'firstName', 'lastName', 'email', 'password', 'team', 'name', 'speciesId', 'level', 'x'),
    fc.jsonValue(),
  ),
);

const CODES = new Set<string>([...Object.keys(ERROR_STATUS), 'GRAPHQL_VALIDATION_FAILED']);

/** A catalogue answer, never a server error; on REST with the catalogue's status. */
function expectCatalogue(driver: Driver, result: Outcome<unknown>): void {
  if (result.ok) return;
  expect(CODES.has(result.code) ? result.code : `not in the catalogue: ${result.code}`).toBe(result.code);
  expect(['INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']).not.toContain(result.code);
  if (driver.name === 'rest') expect(result.status).toBe(ERROR_STATUS[result.code as keyof typeof ERROR_STATUS]);
}

function expectCode(result: Outcome<unknown>, code: string): void {
  expect(result.ok ? 'accepted' : result.code).toBe(code);
}

const expectBadInput = (result: Outcome<unknown>) => expectCode(result, 'BAD_USER_INPUT');

/** A valid body is accepted, or refused with `takenCode` when what it names was already taken; true when accepted. */
function expectAccepted<T>(result: Outcome<T>, taken: boolean, takenCode: string): result is { ok: true; value: T } {
  if (taken) {
    expectCode(result, takenCode);
    return false;
  }
  expect(result.ok ? 'accepted' : `${result.code} ${JSON.stringify(result.fields ?? [])}`).toBe('accepted');
  return result.ok;
}

const runs = (n: number) => ({ numRuns: n, endOnFailure: true });

describe.each(databases)('fuzzing on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => t.close());

  describe.each(namedDrivers)('through %s', (_name, makeDriver) => {
    let api: Driver;
    let me: TrainerFixture;
    const trainers = () => t.app.dataSource.getRepository(Trainer);
    const creatures = () => t.app.dataSource.getRepository(Creature);
    beforeAll(async () => {
      api = makeDriver(t.app);
      me = await createTrainer(t.app);
    });

    it('accepts every registration that follows openapi.json (or finds it taken)', async () => {
      await fc.assert(
        fc.asyncProperty(valid(REGISTER) as fc.Arbitrary<Record<string, string>>, async (body) => {
          const taken = await trainers().exists({
            where: [{ nicknameKey: body.nickname.toLowerCase() }, { email: body.email.toLowerCase() }],
          });
          const result = await api.register(body);
          if (expectAccepted(result, taken, 'TRAINER_ALREADY_EXISTS')) expect(result.value.firstName).toBe(normalizeText(body.firstName));
        }),
        runs(15),
      );
    });

    it('accepts every creature that follows openapi.json (or finds its name taken)', async () => {
      await fc.assert(
        fc.asyncProperty(valid(CREATE) as fc.Arbitrary<{ name: string }>, async (body) => {
          const taken = await creatures().existsBy({ trainerId: me.trainer.id, nameKey: nameKey(normalizeText(body.name)) });
          const result = await api.createCreature(me.token, String(me.trainer.id), body);
          if (expectAccepted(result, taken, 'DUPLICATE_CREATURE')) expect(result.value.name).toBe(normalizeText(body.name));
        }),
        runs(100),
      );
    });

    it('refuses every registration and creature that breaks one rule of openapi.json with BAD_USER_INPUT', async () => {
      await fc.assert(
        fc.asyncProperty(broken(REGISTER), async (body) => expectBadInput(await api.register(body))),
        runs(100),
      );
      await fc.assert(
        fc.asyncProperty(broken(CREATE), async (body) => expectBadInput(await api.createCreature(me.token, String(me.trainer.id), body))),
        runs(100),
      );
    });

    it('answers any input of the GraphQL input types’ shapes with a catalogue code, never a server error', async () => {
      await fc.assert(
        fc.asyncProperty(ofGraphQLType(inputType('RegisterTrainerInput')), async (input) => {
          const result = await api.register(input as Record<string, unknown>);
          expectCatalogue(api, result);
          if (result.ok !== follows(REGISTER, input) && !(!result.ok && result.code === 'TRAINER_ALREADY_EXISTS')) {
            throw new Error(`the rules and the answer disagree on ${JSON.stringify(input)}: ${JSON.stringify(result)}`);
          }
        }),
        runs(60),
      );
      await fc.assert(
        fc.asyncProperty(ofGraphQLType(inputType('CreateCreatureInput')), async (input) => {
          const result = await api.createCreature(me.token, String(me.trainer.id), input as Record<string, unknown>);
          expectCatalogue(api, result);
          if (result.ok !== follows(CREATE, input) && !(!result.ok && result.code === 'DUPLICATE_CREATURE')) {
            throw new Error(`the rules and the answer disagree on ${JSON.stringify(input)}: ${JSON.stringify(result)}`);
          }
        }),
        runs(100),
      );
    });

    it('answers any JSON at all, on every route that takes a body, with a catalogue code', async () => {
      await fc.assert(
        fc.asyncProperty(anything, async (body) => {
          expectCatalogue(api, await api.register(body as Record<string, unknown>));
          expectCatalogue(api, await api.createCreature(me.token, String(me.trainer.id), body as Record<string, unknown>));
          const { email, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
          expectCatalogue(api, await api.authenticate(email, password));
        }),
        runs(60),
      );
    });
  });
});
