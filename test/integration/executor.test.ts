import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';

/*
 * A short document runs on graphql-js its first COMPILE_AFTER (10) times and compiled
 * (graphql-jit) from then on (src/graphql/executor.ts). Whichever runs it, the answer must be
 * the same: data, error codes, fields, variable errors and defaults. Each case sends its
 * document 12 times and compares the first, the second and the last answer.
 */
const SENT = 12;
describe.each(databases)('the compiled executor on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
    for (const name of ['Ada', 'Bo', 'Cy']) await createCreature(t.app, me.trainer.id, { name });
  });
  afterAll(async () => t.close());

  /** The first, second and last of SENT answers: interpreted, interpreted, compiled. */
  const thrice = async (query: string, variables?: Record<string, unknown>, token: string | undefined = me.token) => {
    const answers = [];
    for (let i = 0; i < SENT; i += 1) answers.push(await gql(t.app, query, variables, token));
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
    const answers = await thrice(query, { input: { name: 'Eve', speciesId: 'seven' } });
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
    const valid = await thrice(`query { me { creatures(limit: 2) { name } } }`);
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
    const answers = await thrice(query, { x: false });
    expect(answers[0].data).toEqual({ a: {}, b: { id: String(me.trainer.id), nickname: me.trainer.nickname } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('leaves a variable that was not given out of an input object, as graphql-js does', async () => {
    const all = await gql<{ trainers: { totalCount: number } }>(t.app, '{ trainers(limit: 1) { totalCount } }', {}, me.token);
    const answers = await thrice('query($t: Team) { trainers(limit: 1, filter: { team: $t }) { totalCount } }', {});
    expect(answers[0].data).toEqual({ trainers: { totalCount: all.data!.trainers.totalCount } });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });
});
