import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';

/*
 * A short document runs on graphql-js its first COMPILE_AFTER (10) times and compiled
 * (graphql-jit) from then on (src/graphql/executor.ts). Whichever runs it, the answer must be
 * the same: data, error codes, fields, variable errors and defaults. Each case sends its
 * document 12 times and compares the first, the second and the last answer; the executor's
 * counter (graphql_compiled_runs_total at /metrics) tells how many of them ran compiled.
 */
const SENT = 12;
/** Runs 10 to 12 of a document that compiles. */
const COMPILED = SENT - 9;
describe.each(databases)('the compiled executor on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
    for (const name of ['Ada', 'Bo', 'Cy']) await createCreature(t.app, me.trainer.id, { name });
  });
  afterAll(async () => t.close());

  const counter = async (name: string): Promise<number> => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  const compiledRuns = () => counter('graphql_compiled_runs_total');

  /**
   * The first, second and last of SENT answers: interpreted, interpreted, and compiled when
   * `compiled` (the number of runs the executor counts as compiled) is COMPILED.
   */
  const thrice = async (
    query: string,
    variables?: Record<string, unknown>,
    token: string | undefined = me.token,
    compiled: number | null = COMPILED,
  ) => {
    const before = await compiledRuns();
    const answers = [];
    for (let i = 0; i < SENT; i += 1) answers.push(await gql(t.app, query, variables, token));
    if (compiled !== null) expect((await compiledRuns()) - before).toBe(compiled);
    return [answers[0], answers[1], answers[SENT - 1]];
  };

  it('answers a nested page alike, with argument and variable defaults', async () => {
    const query =
      'query Page($limit: Int! = 2, $offset: Int! = 0) { trainers(limit: $limit, offset: $offset) { totalCount items { id nickname creatures(limit: 2) { id name level trainer { id } } } } }';
    const answers = await thrice(query, {});
    expect(answers[0].status).toBe(200);
    expect(answers[0].errors).toBeUndefined();
    const mine = (answers[0].data as { trainers: { items: { id: string; creatures: { name: string }[] }[] } }).trainers.items.find(
      (item) => item.id === String(me.trainer.id),
    );
    expect(mine?.creatures.map((c) => c.name)).toEqual(['Ada', 'Bo']);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('fills in the defaults of input fields left out (level), and answers a duplicate with its code and field', async () => {
    const query =
      'mutation C($input: CreateCreatureInput!) { createCreature(trainerId: "' + me.trainer.id + '", input: $input) { name level } }';
    const answers = await thrice(query, { input: { name: 'Dee', speciesId: 7 } });
    expect(answers[0].data).toEqual({ createCreature: { name: 'Dee', level: 1 } });
    for (const answer of answers.slice(1)) {
      expect(answer.status).toBe(200);
      expect(answer.errors?.map((e) => [e.extensions?.code, e.path, e.extensions?.fields?.map((f) => f.field)])).toEqual([
        ['DUPLICATE_CREATURE', ['createCreature'], ['name']],
      ]);
    }
    expect(answers[2]).toEqual(answers[1]);
  });

  it('refuses bad variables with the same message and BAD_USER_INPUT (400) every time', async () => {
    const query = 'mutation C($input: CreateCreatureInput!) { createCreature(trainerId: "' + me.trainer.id + '", input: $input) { id } }';
    // Refused before either engine runs it: never compiled.
    const answers = await thrice(query, { input: { name: 'Eve', speciesId: 'seven' } }, me.token, 0);
    expect(answers[0].status).toBe(400);
    expect(answers[0].errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    expect(answers[0].errors?.[0].message).toMatch(/^Variable "\$input" got invalid value/);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('reports an error raised in a resolver with its code, path and fields every time', async () => {
    const answers = await thrice('query { trainers(limit: 101) { totalCount } }');
    expect(answers[0].errors?.[0]).toMatchObject({
      path: ['trainers'],
      extensions: { code: 'BAD_USER_INPUT', fields: [{ field: 'limit' }] },
    });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  // Trainer.creatures has a plain resolver of its own (src/graphql/field-resolvers.ts): its
  // arguments are checked there, each time, whether valid ones were seen before or not.
  it.each([
    ['limit', 'creatures(limit: 0)'],
    ['limit', 'creatures(limit: 101)'],
    ['offset', 'creatures(offset: -1)'],
  ])('refuses a nested field’s bad argument (%s) with its code, path and field every time: %s', async (field, selection) => {
    // Sent by every case: compiled from the first case's 10th run on.
    const valid = await thrice(`query { me { creatures(limit: 2) { name } } }`, undefined, me.token, null);
    expect(valid.map((answer) => answer.data)).toEqual(Array(3).fill({ me: { creatures: [{ name: 'Ada' }, { name: 'Bo' }] } }));
    const answers = await thrice(`query { me { id ${selection} { id } } }`);
    expect(answers[0].data).toBeNull();
    expect(answers[0].errors?.[0]).toMatchObject({
      path: ['me', 'creatures'],
      extensions: { code: 'BAD_USER_INPUT', fields: [{ field }] },
    });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('runs the operation the request names, in a document of several', async () => {
    const query = 'query A { me { id } } query B { me { nickname } }';
    const rounds = Array.from({ length: SENT }, () => [
      ['B', { me: { nickname: me.trainer.nickname } }],
      ['A', { me: { id: String(me.trainer.id) } }],
    ]).flat() as [string, unknown][];
    for (const [operationName, expected] of rounds) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
        payload: { query, operationName },
      });
      expect(response.json()).toEqual({ data: expected });
    }
  });

  it('answers an unauthenticated request alike', async () => {
    const answers = await thrice('{ me { id } }', undefined, '');
    expect(answers[0].errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('answers alike when a fragment is included in one place and plainly used in another', async () => {
    const query = 'query Q($x: Boolean!) { a: me { ...F @include(if: $x) } b: me { ...F } } fragment F on Trainer { id nickname }';
    // @include: always graphql-js (see compilable).
    const answers = await thrice(query, { x: false }, me.token, 0);
    expect(answers[0].data).toEqual({ a: {}, b: { id: String(me.trainer.id), nickname: me.trainer.nickname } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('leaves a variable that was not given out of an input object, as graphql-js does', async () => {
    const all = await gql<{ trainers: { totalCount: number } }>(t.app, '{ trainers(limit: 1) { totalCount } }', {}, me.token);
    // A variable inside an input object literal: always graphql-js (see compilable).
    const answers = await thrice('query($t: Team) { trainers(limit: 1, filter: { team: $t }) { totalCount } }', {}, me.token, 0);
    expect(answers[0].data).toEqual({ trainers: { totalCount: all.data!.trainers.totalCount } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  // What the one path must keep doing once a text runs compiled (these held the direct answers to it before).
  it('answers a compiled query from the database as it is now, not as it was when it was compiled', async () => {
    type Mine = { trainer: { creaturesOwned: number; creatures: { name: string }[] } };
    const query = 'query Mine($id: ID!) { trainer(id: $id) { creaturesOwned creatures(limit: 100) { name } } }';
    const [, , compiled] = await thrice(query, { id: String(me.trainer.id) });
    const then = (compiled.data as Mine).trainer;
    await createCreature(t.app, me.trainer.id, { name: 'Fay' });
    const before = await compiledRuns();
    const now = (await gql<Mine>(t.app, query, { id: String(me.trainer.id) }, me.token)).data!.trainer;
    expect(now.creaturesOwned).toBe(then.creaturesOwned + 1);
    expect(now.creatures.map((c) => c.name)).toEqual([...then.creatures.map((c) => c.name), 'Fay']);
    expect((await compiledRuns()) - before).toBe(1);
  });

  it('answers an error of a compiled query as before, running the query once', async () => {
    // A trainer read (its own statement), then an id no creature can have: a field error.
    const query = 'query Broken($t: ID!, $id: ID!) { trainer(id: $t) { id creaturesOwned } creature(id: $id) { id } }';
    const t1 = String(me.trainer.id);
    const statements = async (variables: Record<string, unknown>) => {
      const before = await counter('db_statements_total');
      const answer = await gql(t.app, query, variables, me.token);
      return { answer, statements: (await counter('db_statements_total')) - before };
    };
    const interpreted = await statements({ t: t1, id: 'not-an-id' });
    // The interpreted run above counts among the ten before compilation.
    await thrice(query, { t: t1, id: 'not-an-id-either' }, me.token, COMPILED + 1);
    const runs = await compiledRuns();
    const compiled = await statements({ t: t1, id: 'not-an-id' });
    expect((await compiledRuns()) - runs).toBe(1);
    expect(interpreted.answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(interpreted.statements).toBeGreaterThan(0);
    expect([compiled.answer.status, compiled.answer.errors, compiled.answer.data]).toEqual([
      interpreted.answer.status,
      interpreted.answer.errors,
      interpreted.answer.data,
    ]);
    // Run once: as many statements as the interpreted run.
    expect(compiled.statements).toBe(interpreted.statements);
  });

  it('checks the cost of every run of a compiled query against its own variables', async () => {
    const query = 'query Costly($n: Int!) { trainers(limit: $n) { items { creatures(limit: 50) { id } } } }';
    await thrice(query, { n: 2 });
    const costly = await gql(t.app, query, { n: 100 }, me.token);
    expect(costly.status).toBe(400);
    expect(costly.errors?.[0]).toMatchObject({ message: expect.stringMatching(/cost/), extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('names a compiled run by its operation at /metrics', async () => {
    await thrice('query NamedForMetrics { me { id } }');
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith('http_requests_total{') && l.includes('operation="NamedForMetrics"'));
    expect(line).toMatch(/status="200"\} 12$/);
  });

  it('answers each odd request the same before and after its text runs compiled (status and body)', async () => {
    const plain = 'query T9 { __typename }';
    const withVariable = 'query T10($id: ID!) { trainer(id: $id) { id } }';
    const id = String(me.trainer.id);
    type Odd = { name: string } & ({ body: Record<string, unknown> } | { get: Record<string, string> });
    const odd: Odd[] = [
      { name: 'a wrong operationName', body: { query: plain, operationName: 'Nope' } },
      { name: 'an empty operationName', body: { query: plain, operationName: '' } },
      { name: 'operationName null', body: { query: plain, operationName: null } },
      { name: 'operationName not a string', body: { query: plain, operationName: 7 } },
      { name: 'an extra body key', body: { query: plain, extra: true } },
      { name: 'variables as a string', body: { query: plain, variables: '{}' } },
      { name: 'variables as a list', body: { query: plain, variables: [] } },
      { name: 'GET with a wrong operationName', get: { query: plain, operationName: 'Nope' } },
      { name: 'GET with an empty operationName', get: { query: plain, operationName: '' } },
      { name: 'GET with the right operationName', get: { query: plain, operationName: 'T9' } },
      { name: 'a variable of the wrong type', body: { query: withVariable, variables: { id: true } } },
      { name: 'a missing variable', body: { query: withVariable, variables: {} } },
      { name: 'a variable the document does not declare', body: { query: withVariable, variables: { id, other: 1 } } },
      { name: 'a wrong operationName, with variables', body: { query: withVariable, variables: { id }, operationName: 'T9' } },
      { name: 'two operations and no name', body: { query: `${plain} query T11 { __typename }` } },
    ];
    const send = async (request: Odd) => {
      const response =
        'body' in request
          ? await t.app.inject({
              method: 'POST',
              url: '/graphql',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
              payload: JSON.stringify(request.body),
            })
          : await t.app.inject({
              method: 'GET',
              url: `/graphql?${new URLSearchParams(request.get).toString()}`,
              headers: { 'apollo-require-preflight': 'true', authorization: `Bearer ${me.token}` },
            });
      return { status: response.statusCode, type: response.headers['content-type'], body: response.json<unknown>() };
    };
    const before: { status: number; type: unknown; body: unknown }[] = [];
    for (const request of odd) before.push(await send(request));
    await thrice(plain, undefined, me.token, null);
    await thrice(withVariable, { id }, me.token, null);
    const after: { status: number; type: unknown; body: unknown }[] = [];
    for (const request of odd) after.push(await send(request));
    expect(odd.map((request, i) => [request.name, after[i]])).toEqual(odd.map((request, i) => [request.name, before[i]]));
    expect(before.every(({ status }) => status < 500)).toBe(true);
  });
});
