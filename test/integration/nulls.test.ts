import {
  astFromValue,
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isInputObjectType,
  isLeafType,
  isNonNullType,
  isObjectType,
  print,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
  type IntrospectionQuery,
} from 'graphql';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, signIn, TEST_PASSWORD, unique, type TrainerFixture } from '../helpers/factories';
import { gql, type GraphQLBody, type Problem } from '../helpers/graphql';

/*
 * Null where a client may leave a value out (a nullable argument, a nullable input field, an
 * optional JSON body field) is never a crash: GraphQL treats it as absent or answers
 * BAD_USER_INPUT, REST answers 400 BAD_USER_INPUT (docs/api.md). The positions are read from
 * the app's own schema (introspection) and OpenAPI document, so a new argument, input field or
 * body field is covered the day it is added.
 */
type Args = Record<string, unknown>;

describe.each(databases)('null for what may be left out, on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let schema: GraphQLSchema;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
    const introspection = await gql<IntrospectionQuery>(t.app, getIntrospectionQuery());
    schema = buildClientSchema(introspection.data!);
  });
  afterAll(async () => t.close());

  /** Valid values for each root field's required arguments (made fresh per request: a token, a creature, a refresh token). */
  const validArgs: Record<string, () => Promise<Args>> = {
    creature: async () => ({ id: String((await createCreature(t.app, me.trainer.id)).id) }),
    me: async () => ({}),
    trainer: async () => ({ id: String(me.trainer.id) }),
    trainers: async () => ({}),
    trainerByNickname: async () => ({ nickname: me.trainer.nickname }),
    authenticate: async () => ({ email: me.email, password: TEST_PASSWORD }),
    refreshSession: async () => ({ refreshToken: (await signIn(t.app, me.trainer.id)).refreshToken }),
    logout: async () => ({}),
    createCreature: async () => ({ trainerId: String(me.trainer.id), input: { name: unique('c'), speciesId: 1 } }),
    updateCreature: async () => ({ id: String((await createCreature(t.app, me.trainer.id)).id), input: { level: 7 } }),
    deleteCreature: async () => ({ id: String((await createCreature(t.app, me.trainer.id)).id) }),
    updateMe: async () => ({ input: { lastName: 'Unchanged' } }),
    // Wrong passwords: these calls must change nothing of the trainer the others use.
    changePassword: async () => ({ currentPassword: 'not-the-password', newPassword: 'long-enough-2' }),
    deleteMe: async () => ({ password: 'not-the-password' }),
    registerTrainer: async () => {
      const nickname = unique('n');
      return {
        input: { nickname, firstName: 'A', lastName: 'B', email: `${nickname}@example.test`, password: 'long-enough-1', team: 'VALOR' },
      };
    },
  };

  /** Every path (argument, then input fields) of a root field where null may be sent. */
  function nullablePaths(field: GraphQLField<unknown, unknown>): string[][] {
    const paths: string[][] = [];
    const walk = (type: GraphQLInputType, path: string[], seen: ReadonlySet<string>) => {
      if (!isNonNullType(type)) paths.push(path);
      const named = getNamedType(type);
      if (!isInputObjectType(named) || seen.has(named.name)) return;
      for (const inner of Object.values(named.getFields())) walk(inner.type, [...path, inner.name], new Set([...seen, named.name]));
    };
    for (const arg of field.args) walk(arg.type, [arg.name], new Set());
    return paths;
  }

  const roots = () =>
    [schema.getQueryType()!, schema.getMutationType()!].flatMap((type) =>
      Object.values(type.getFields()).map((field) => ({ operation: type === schema.getQueryType() ? 'query' : 'mutation', field })),
    );

  /** `args` with null at `path` (objects on the way made as needed). */
  function withNull(args: Args, path: string[]): Args {
    const copy = structuredClone(args);
    let at: Args = copy;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Args;
    at[path[path.length - 1]] = null;
    return copy;
  }

  /** The scalar fields of what the field returns (those without required arguments), so that the field resolves in full. */
  const selection = (field: GraphQLField<unknown, unknown>) => {
    const type = getNamedType(field.type);
    if (!isObjectType(type)) return '';
    const leaves = Object.values(type.getFields()).filter(
      (f) => isLeafType(getNamedType(f.type)) && f.args.every((a) => !isNonNullType(a.type)),
    );
    return ` { __typename ${leaves.map((f) => f.name).join(' ')} }`;
  };
  const literal = (arg: GraphQLArgument, value: unknown) => print(astFromValue(value, arg.type)!);

  /** The same call three ways: every value a literal; every argument a variable; the null alone a variable inside the literal. */
  function requests(operation: string, field: GraphQLField<unknown, unknown>, args: Args, path: string[]) {
    const given = field.args.filter((arg) => arg.name in args);
    const call = (inside: string) => `${field.name}${inside ? `(${inside})` : ''}${selection(field)}`;
    const asLiterals = `${operation} { ${call(given.map((arg) => `${arg.name}: ${literal(arg, args[arg.name])}`).join(', '))} }`;
    const definitions = given.map((arg) => `$${arg.name}: ${arg.type.toString()}`).join(', ');
    const asVariables = `${operation}${definitions ? `(${definitions})` : ''} { ${call(given.map((arg) => `${arg.name}: $${arg.name}`).join(', '))} }`;
    const list = [
      { query: asLiterals, variables: {} },
      { query: asVariables, variables: args },
    ];
    if (path.length > 1) {
      // The input field's type, for a variable that carries its null inside the literal (the only null of `args`).
      let type = getNamedType(field.args.find((arg) => arg.name === path[0])!.type);
      for (const key of path.slice(1, -1)) if (isInputObjectType(type)) type = getNamedType(type.getFields()[key].type);
      const leaf = isInputObjectType(type) ? type.getFields()[path[path.length - 1]].type : undefined;
      if (leaf)
        list.push({
          query: asLiterals.replace(': null', ': $v').replace(operation, `${operation}($v: ${leaf.toString()})`),
          variables: { v: null },
        });
    }
    return list;
  }

  it('never answers INTERNAL_SERVER_ERROR or 500 to null in any nullable argument or input field of a query or mutation', async () => {
    const covered: string[] = [];
    const failures: string[] = [];
    for (const { operation, field } of roots()) {
      expect(Object.keys(validArgs)).toContain(field.name);
      for (const path of nullablePaths(field)) {
        covered.push(`${field.name}.${path.join('.')}`);
        for (const body of requests(operation, field, withNull(await validArgs[field.name](), path), path)) {
          const { token } = await signIn(t.app, me.trainer.id);
          const response = await t.app.inject({
            method: 'POST',
            url: '/graphql',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            payload: JSON.stringify(body),
          });
          const answer = response.json<GraphQLBody>();
          if (response.statusCode >= 500 || answer.errors?.some((error) => error.extensions?.code === 'INTERNAL_SERVER_ERROR')) {
            failures.push(`${JSON.stringify(body)} -> ${response.statusCode} ${response.body}`);
          }
        }
      }
    }
    expect(covered).toEqual(
      expect.arrayContaining([
        'trainers.after',
        'trainers.filter',
        'trainers.filter.nickname',
        'trainers.filter.team',
        'updateCreature.input.name',
        'updateMe.input.nickname',
        'updateMe.input.team',
      ]),
    );
    expect(failures).toEqual([]);
  });

  it('takes a null after as the first page, and a null condition as no condition', async () => {
    const query =
      'query($after: String, $filter: TrainerFilter) { trainers(limit: 5, after: $after, filter: $filter) { totalCount nextCursor items { id } } }';
    const first = await gql(t.app, query, {}, me.token);
    expect(first.errors).toBeUndefined();
    expect(await gql(t.app, query, { after: null }, me.token)).toEqual(first);
    expect(await gql(t.app, query, { filter: null }, me.token)).toEqual(first);
    expect(await gql(t.app, query, { filter: { nickname: null, nicknameContains: null, team: null } }, me.token)).toEqual(first);
    const literal = await gql(
      t.app,
      '{ trainers(limit: 5, after: null, filter: { nickname: null, nicknameContains: null, team: null }) { totalCount nextCursor items { id } } }',
      undefined,
      me.token,
    );
    expect(literal).toEqual(first);
    // Beside a real condition, a null one leaves it alone.
    const mystic = await gql(t.app, query, { filter: { team: 'MYSTIC', nickname: null } }, me.token);
    expect(mystic.data).toEqual(first.data);
    const valor = await gql(t.app, query, { filter: { team: 'VALOR', nicknameContains: null } }, me.token);
    expect(valor.data).toMatchObject({ trainers: { totalCount: 0, items: [] } });
  });

  it('takes an empty search value as no condition, in the query string of GET /trainer and in the filter', async () => {
    const rest = async (search: string) => {
      const response = await t.app.inject({
        method: 'GET',
        url: `/trainer?limit=1${search}`,
        headers: { authorization: `Bearer ${me.token}` },
      });
      return { status: response.statusCode, link: response.headers.link, body: response.json<unknown>() };
    };
    // More than one trainer, so that the page has a next one (and a Link header).
    await createTrainer(t.app, { team: 'VALOR' as never });
    const all = await rest('');
    expect(all.status).toBe(200);
    expect(all.link).toEqual(expect.any(String));
    for (const search of ['&nickname=', '&nicknameContains=', '&team=', '&nickname=&nicknameContains=&team=']) {
      expect([search, await rest(search)]).toEqual([search, all]);
    }
    const valor = await rest('&team=VALOR');
    expect(valor.status).toBe(200);
    for (const search of ['&team=VALOR&nickname=', '&nicknameContains=&team=VALOR'])
      expect([search, await rest(search)]).toEqual([search, valor]);

    const query = 'query($filter: TrainerFilter) { trainers(limit: 1, filter: $filter) { totalCount nextCursor items { id } } }';
    const first = await gql(t.app, query, {}, me.token);
    expect(first.errors).toBeUndefined();
    for (const filter of [{ nickname: '' }, { nicknameContains: '' }, { nickname: '', nicknameContains: '' }]) {
      expect([filter, await gql(t.app, query, { filter }, me.token)]).toEqual([filter, first]);
    }
    const literal = await gql(
      t.app,
      '{ trainers(limit: 1, filter: { nickname: "", nicknameContains: "" }) { totalCount nextCursor items { id } } }',
      undefined,
      me.token,
    );
    expect(literal).toEqual(first);
    const valorByGraphQL = await gql(t.app, query, { filter: { team: 'VALOR' } }, me.token);
    expect(await gql(t.app, query, { filter: { team: 'VALOR', nickname: '' } }, me.token)).toEqual(valorByGraphQL);
  });

  it('refuses null in any JSON body field of a REST route with 400 BAD_USER_INPUT, never 500', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: { properties?: Args } }> } }>>;
    }>();
    const covered: string[] = [];
    for (const [path, methods] of Object.entries(openapi.paths)) {
      for (const [method, spec] of Object.entries(methods)) {
        const properties = spec.requestBody?.content?.['application/json']?.schema?.properties;
        if (!properties) continue;
        for (const key of Object.keys(properties)) {
          covered.push(`${method} ${path} ${key}`);
          const creature = await createCreature(t.app, me.trainer.id);
          const url = path.replace('{trainerId}', String(me.trainer.id)).replace('{creatureId}', String(creature.id));
          const { token } = await signIn(t.app, me.trainer.id);
          const response = await t.app.inject({
            method: method.toUpperCase() as 'POST',
            url,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            payload: JSON.stringify({ [key]: null }),
          });
          expect([`${method} ${path} ${key}`, response.statusCode, response.json<Problem>().code]).toEqual([
            `${method} ${path} ${key}`,
            400,
            'BAD_USER_INPUT',
          ]);
          expect(response.json<Problem>().fields).toEqual(expect.arrayContaining([expect.objectContaining({ field: key })]));
        }
      }
    }
    expect(covered).toEqual(
      expect.arrayContaining(['patch /trainer/{trainerId}/creature/{creatureId} name', 'post /trainer/logout everywhere']),
    );
  });
});
