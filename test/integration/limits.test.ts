import { Trainer } from '../../src/trainers/trainer.entity';
import { startTestApp, type TestApp } from '../helpers/app';
import { createTrainer, type TrainerFixture } from '../helpers/factories';
import { errorCode, gql, type GraphQLBody } from '../helpers/graphql';

/* The GraphQL request limits of the contract: refused in validation, before any resolver runs. */

describe('GraphQL request limits', () => {
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const ask = (query: string, variables: Record<string, unknown> = {}) => gql(t.app, query, variables, me.token);
  /** Limits checked in validation answer GRAPHQL_VALIDATION_FAILED; the cost (it needs the variables) and the token count BAD_USER_INPUT. */
  const refused = async (query: string, variables: Record<string, unknown> = {}, pattern?: RegExp, code = 'GRAPHQL_VALIDATION_FAILED') => {
    const res = await ask(query, variables);
    expect(res.status).toBe(400);
    expect(res.data ?? null).toBeNull();
    expect(errorCode(res)).toBe(code);
    if (pattern) expect(res.errors![0].message).toMatch(pattern);
  };
  const tooCostly = (query: string, variables: Record<string, unknown> = {}, pattern = /cost/i) =>
    refused(query, variables, pattern, 'BAD_USER_INPUT');

  /** `levels` levels of selection: me { creatures { trainer { creatures { ... { id } } } } }. */
  const deep = (levels: number): string => {
    let inner = 'id';
    for (let level = levels - 1; level >= 2; level -= 1) inner = `${level % 2 === 0 ? 'creatures(limit: 1)' : 'trainer'} { ${inner} }`;
    return `{ me { ${inner} } }`;
  };

  it('allows 8 levels of selection and refuses 9', async () => {
    expect((await ask(deep(8))).errors).toBeUndefined();
    await refused(deep(9), {}, /depth/i);
  });

  it('counts depth through fragments too', async () => {
    const query = `query { me { ...A } }
      fragment A on Trainer { creatures(limit: 1) { trainer { creatures(limit: 1) { trainer { ...B } } } } }
      fragment B on Trainer { creatures(limit: 1) { trainer { creatures(limit: 1) { id } } } }`;
    await refused(query, {}, /depth/i);
  });

  it('allows 30 aliases and refuses 31', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: me { id }`).join(' ')} }`;
    expect((await ask(aliases(30))).errors).toBeUndefined();
    await refused(aliases(31), {}, /alias/i);
    // Aliases of __typename count too (graphql-armor leaves them out unless told otherwise).
    const typenames = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(' ')} }`;
    expect((await ask(typenames(30))).errors).toBeUndefined();
    await refused(typenames(31), {}, /alias/i);
  });

  it('refuses two authenticate fields in one operation, and runs neither', async () => {
    const query = `mutation { a: authenticate(email: "${me.email}", password: "x1") { token } b: authenticate(email: "${me.email}", password: "x2") { token } }`;
    await refused(query, {}, /authenticate/);
  });

  it('counts credential fields reached through fragments', async () => {
    const query = `mutation { a: authenticate(email: "${me.email}", password: "x1") { token } ...Again }
      fragment Again on Mutation { b: authenticate(email: "${me.email}", password: "x2") { token } }`;
    await refused(query, {}, /authenticate/);
  });

  it('runs one operation of a document that holds a Register and a Login operation', async () => {
    const email = `two_ops_${Date.now()}@example.test`;
    const query = `mutation Register { registerTrainer(input: { nickname: "two_ops_${Date.now() % 1e6}", firstName: "T", lastName: "O", email: "${email}", password: "password-1", team: VALOR }) { id } }
      mutation Login { authenticate(email: "${email}", password: "password-1") { token } }`;
    const send = (operationName: string) =>
      t.app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: { query, operationName } });
    const registered = (await send('Register')).json<GraphQLBody<{ registerTrainer: { id: string } }>>();
    expect(registered.errors).toBeUndefined();
    expect(registered.data!.registerTrainer.id).toMatch(/^\d+$/);
    const login = (await send('Login')).json<GraphQLBody<{ authenticate: { token: string } }>>();
    expect(login.errors).toBeUndefined();
    expect(login.data!.authenticate.token).toEqual(expect.any(String));
  });

  it('refuses registerTrainer next to authenticate, and writes nothing', async () => {
    const query = `mutation {
      registerTrainer(input: { nickname: "limit_probe", firstName: "L", lastName: "P", email: "limit_probe@example.test", password: "password-1", team: VALOR }) { id }
      authenticate(email: "${me.email}", password: "x") { token }
    }`;
    await refused(query);
    expect(await t.app.dataSource.getRepository(Trainer).countBy({ nickname: 'limit_probe' })).toBe(0);
  });

  it('refuses an operation costing more than 5,000: 100 trainers × 50 creatures', async () => {
    await tooCostly('{ trainers(limit: 100) { items { creatures(limit: 50) { id } } } }');
  });

  it('refuses a document whose fragments multiply past what can be measured, instead of letting it through', async () => {
    const fragments = Array.from({ length: 13 }, (_, i) =>
      i < 12 ? `fragment A${i} on Trainer { ...A${i + 1} ...A${i + 1} }` : `fragment A${i} on Trainer { id }`,
    ).join(' ');
    await tooCostly(`{ trainers(limit: 100) { items { creatures(limit: 50) { id } } } me { ...A0 } } ${fragments}`, {}, /cost|measure/i);
  });

  it('weighs nicknameContains searches: 30 aliased searches are refused, a few are fine, also when the filter is a variable', async () => {
    const searches = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `s${i}: trainers(limit: 1, filter: { nicknameContains: "tr${i}" }) { items { id } }`).join(' ')} }`;
    await tooCostly(searches(30));
    await tooCostly(searches(20));
    expect((await ask(searches(3))).errors).toBeUndefined();
    // Team filters are read from an index at no extra weight.
    const teams = `{ ${Array.from({ length: 30 }, (_, i) => `t${i}: trainers(limit: 1, filter: { team: MYSTIC }) { items { id } }`).join(' ')} }`;
    expect((await ask(teams)).errors).toBeUndefined();
    // One text, two costs: the cost remembered for a team filter is not the search's.
    const byVariable = `query($f: TrainerFilter) { ${Array.from({ length: 20 }, (_, i) => `a${i}: trainers(limit: 1, filter: $f) { items { id } }`).join(' ')} }`;
    expect((await ask(byVariable, { f: { team: 'MYSTIC' } })).errors).toBeUndefined();
    await tooCostly(byVariable, { f: { nicknameContains: 'tr' } });
  });

  it('counts list limits given as variables', async () => {
    const query = 'query($t: Int!, $c: Int!) { trainers(limit: $t) { items { creatures(limit: $c) { id } } } }';
    await tooCostly(query, { t: 100, c: 50 });
    expect((await ask(query, { t: 10, c: 50 })).errors).toBeUndefined();
    // The same document again, after its cost was remembered for other values.
    await tooCostly(query, { t: 100, c: 50 });
    await tooCostly(query, { t: 50, c: 101 }, /cost|between/i);
    await tooCostly(query, { c: 50, t: 100 });
  });

  it('measures skipped parts by their directive variables, each time they change', async () => {
    const query = 'query($big: Boolean!) { trainers(limit: 100) { items { creatures(limit: 50) @include(if: $big) { id } } } }';
    expect((await ask(query, { big: false })).errors).toBeUndefined();
    await tooCostly(query, { big: true });
    expect((await ask(query, { big: false })).errors).toBeUndefined();
  });

  it('measures the operation that is run when a document holds several', async () => {
    const query = 'query Small { me { id } } query Big { trainers(limit: 100) { items { creatures(limit: 50) { id } } } }';
    const send = (operationName: string) =>
      t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization: `Bearer ${me.token}`, 'content-type': 'application/json' },
        payload: { query, operationName },
      });
    expect((await send('Small')).json<GraphQLBody>().errors).toBeUndefined();
    expect((await send('Big')).json<GraphQLBody>().errors?.[0]?.message).toMatch(/cost/i);
    expect((await send('Small')).json<GraphQLBody>().errors).toBeUndefined();
  });

  it('accepts a page of 100 trainers with 10 creatures each', async () => {
    const res = await ask('{ trainers(limit: 100) { totalCount items { id nickname creaturesOwned creatures(limit: 10) { id name } } } }');
    expect(res.errors).toBeUndefined();
  });

  it('refuses a document of more than 1,000 tokens before parsing it all', async () => {
    await refused(`{ me { ${'id '.repeat(1200)} } }`, {}, /tokens/i, 'BAD_USER_INPUT');
  });

  it('refuses more than 10 directives', async () => {
    await refused(`{ me { ${Array.from({ length: 11 }, (_, i) => `d${i}: id @include(if: true)`).join(' ')} } }`, {}, /directive/i);
  });
});
