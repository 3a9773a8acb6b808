import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import type { GraphQLBody } from '../helpers/graphql';

/*
 * A query text Apollo has run compiled (its 10th run; src/graphql/executor.ts) is answered again
 * without Apollo's request pipeline (src/graphql/direct.ts). Those answers must be Apollo's own,
 * to the byte and header, and everything Apollo would refuse or report must still be Apollo's
 * answer. A request with `"extensions": {}` is always Apollo's (only plain requests are taken),
 * which gives each direct answer an Apollo answer to be compared with; /metrics counts the
 * direct ones.
 */
const LEARN = 10;
describe.each(databases)('queries answered without Apollo’s pipeline on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let other: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
    other = await createTrainer(t.app);
    for (const name of ['Ada', 'Bo']) await createCreature(t.app, other.trainer.id, { name });
  });
  afterAll(async () => t.close());

  const post = async (body: Record<string, unknown>, headers: Record<string, string> = {}, token: string | undefined = me.token) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      payload: JSON.stringify(body),
    });
    const { date: _date, 'x-request-id': _id, ...kept } = response.headers;
    return { status: response.statusCode, headers: kept, body: response.body };
  };
  const parsed = (answer: { body: string }) => JSON.parse(answer.body) as GraphQLBody;
  const direct = async (): Promise<number> => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(/^graphql_direct_answers_total (\d+)$/m.exec(text)?.[1]);
  };
  /** Sends `body` until Apollo has run it compiled. */
  const learn = async (body: Record<string, unknown>, token?: string) => {
    for (let i = 0; i < LEARN; i += 1) expect((await post(body, {}, token)).status).toBe(200);
  };
  /** The answer to `body` directly and through Apollo, and how many direct answers it made. */
  const both = async (body: Record<string, unknown>, headers: Record<string, string> = {}, token?: string) => {
    const before = await direct();
    const answer = await post(body, headers, token);
    const counted = (await direct()) - before;
    const apollo = await post({ ...body, extensions: {} }, headers, token);
    expect((await direct()) - before).toBe(counted);
    return { answer, apollo, counted };
  };

  const TRAINER = 'query Trainer($id: ID!) { trainer(id: $id) { id nickname email team creaturesOwned createdAt } me { id email } }';

  it.each([
    ['no Accept', {}],
    ['Accept: */*', { accept: '*/*' }],
    ['Accept: application/json', { accept: 'application/json' }],
    ['Accept: application/graphql-response+json', { accept: 'application/graphql-response+json' }],
    ["Apollo Client's Accept", { accept: 'application/graphql-response+json,application/json;q=0.9' }],
    ['Accept of graphql-request', { accept: 'application/graphql-response+json, application/graphql+json, application/json' }],
  ])('answers a known query as Apollo does, status, headers and body, with %s', async (_name, headers) => {
    const body = { query: TRAINER, variables: { id: String(other.trainer.id) }, operationName: 'Trainer' };
    await learn(body);
    const { answer, apollo, counted } = await both(body, headers);
    expect(counted).toBe(1);
    expect(answer).toEqual(apollo);
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(answer.body)).toEqual({
      data: {
        trainer: {
          id: String(other.trainer.id),
          nickname: other.trainer.nickname,
          email: null,
          team: other.trainer.team,
          creaturesOwned: 2,
          createdAt: expect.any(String),
        },
        me: { id: String(me.trainer.id), email: me.trainer.email },
      },
    });
  });

  it('answers from the database as it is now, not as it was when the query was learned', async () => {
    const query = 'query Mine($id: ID!) { trainer(id: $id) { creaturesOwned creatures(limit: 5) { name } } }';
    const body = { query, variables: { id: String(me.trainer.id) } };
    await learn(body);
    await createCreature(t.app, me.trainer.id, { name: 'Cy' });
    const { answer, counted } = await both(body);
    expect(counted).toBe(1);
    expect(JSON.parse(answer.body)).toEqual({ data: { trainer: { creaturesOwned: 1, creatures: [{ name: 'Cy' }] } } });
  });

  it('counts direct answers by their operation name at /metrics', async () => {
    const body = { query: 'query NamedForMetrics { me { id } }' };
    await learn(body);
    for (let i = 0; i < 3; i += 1) await post(body);
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith('http_requests_total{') && l.includes('operation="NamedForMetrics"'));
    expect(line).toMatch(/status="200"\} 13$/);
  });

  it.each([
    ['a variable that does not fit its type', { variables: { id: { not: 'an id' } } }, undefined, 400, 'BAD_USER_INPUT'],
    ['a missing variable', { variables: {} }, undefined, 400, 'BAD_USER_INPUT'],
    ['an operation name the document does not have', { operationName: 'Other' }, undefined, 400, 'BAD_USER_INPUT'],
    ['no token (an error while resolving)', {}, '', 200, 'UNAUTHENTICATED'],
    ['a token that is not valid', {}, 'not-a-token', 200, 'UNAUTHENTICATED'],
  ])('leaves %s to Apollo', async (_name, change, token, status, code) => {
    const body = { query: TRAINER, variables: { id: String(other.trainer.id) } };
    await learn(body);
    const { answer, apollo, counted } = await both({ ...body, ...change }, {}, token);
    expect(counted).toBe(0);
    expect(answer).toEqual(apollo);
    expect(answer.status).toBe(status);
    expect(parsed(answer).errors?.[0].extensions?.code).toBe(code);
  });

  it('answers each odd request the same before and after its text is known (status and body)', async () => {
    const plain = 'query T9 { __typename }';
    const withVariable = 'query T10($id: ID!) { trainer(id: $id) { id } }';
    const id = String(other.trainer.id);
    type Odd = { name: string; text: string } & ({ body: Record<string, unknown> } | { get: Record<string, string> });
    const odd: Odd[] = [
      { name: 'a wrong operationName', text: plain, body: { query: plain, operationName: 'Nope' } },
      { name: 'an empty operationName', text: plain, body: { query: plain, operationName: '' } },
      { name: 'operationName null', text: plain, body: { query: plain, operationName: null } },
      { name: 'operationName not a string', text: plain, body: { query: plain, operationName: 7 } },
      { name: 'an extra body key', text: plain, body: { query: plain, extra: true } },
      { name: 'variables as a string', text: plain, body: { query: plain, variables: '{}' } },
      { name: 'variables as a list', text: plain, body: { query: plain, variables: [] } },
      { name: 'GET with a wrong operationName', text: plain, get: { query: plain, operationName: 'Nope' } },
      { name: 'GET with an empty operationName', text: plain, get: { query: plain, operationName: '' } },
      { name: 'GET with the right operationName', text: plain, get: { query: plain, operationName: 'T9' } },
      { name: 'a variable of the wrong type', text: withVariable, body: { query: withVariable, variables: { id: true } } },
      { name: 'a missing variable', text: withVariable, body: { query: withVariable, variables: {} } },
      { name: 'a variable the document does not declare', text: withVariable, body: { query: withVariable, variables: { id, other: 1 } } },
      {
        name: 'a wrong operationName, with variables',
        text: withVariable,
        body: { query: withVariable, variables: { id }, operationName: 'T9' },
      },
      {
        name: 'two operations and no name',
        text: plain,
        body: { query: `${plain} query T11 { __typename }` },
      },
    ];
    const send = async (request: Odd) => {
      if ('body' in request) {
        const { status, body } = await post(request.body);
        return { status, body };
      }
      const response = await t.app.inject({
        method: 'GET',
        url: `/graphql?${new URLSearchParams(request.get).toString()}`,
        headers: { 'apollo-require-preflight': 'true', authorization: `Bearer ${me.token}` },
      });
      return { status: response.statusCode, body: response.body };
    };
    const before: { status: number; body: string }[] = [];
    for (const request of odd) before.push(await send(request));
    await learn({ query: plain });
    await learn({ query: withVariable, variables: { id } });
    for (const known of [{ query: plain }, { query: withVariable, variables: { id } }]) expect((await both(known)).counted).toBe(1);
    const after: { status: number; body: string }[] = [];
    for (const request of odd) after.push(await send(request));
    expect(odd.map((request, i) => [request.name, after[i]])).toEqual(odd.map((request, i) => [request.name, before[i]]));
    expect(before.every(({ status }) => status < 500)).toBe(true);
  });

  it('runs a known query that fails once: Apollo reports the errors it had, with what it read', async () => {
    const body = { query: 'query Failing { trainers(limit: 2) { items { id } } me { id creatures(limit: 101) { id } } }' };
    for (let i = 0; i < LEARN; i += 1) await post(body);
    const statementsOf = async (sent: Record<string, unknown>) => {
      const metric = async () =>
        Number(/^db_statements_total (\d+)$/m.exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1]);
      const before = await metric();
      const answer = await post(sent);
      return { answer, statements: (await metric()) - before };
    };
    const viaApollo = await statementsOf({ ...body, extensions: {} });
    const tried = await statementsOf(body);
    expect(tried.answer).toEqual(viaApollo.answer);
    expect(tried.statements).toBe(viaApollo.statements);
    expect(viaApollo.statements).toBeGreaterThan(0);
    expect(parsed(tried.answer).errors?.map((e) => [e.path, e.extensions?.code])).toEqual([[['me', 'creatures'], 'BAD_USER_INPUT']]);
  });

  it('leaves to Apollo an Accept it must negotiate, and answers one it cannot serve with 406', async () => {
    const body = { query: TRAINER, variables: { id: String(other.trainer.id) } };
    await learn(body);
    const html = await both(body, { accept: 'text/html' });
    expect([html.counted, html.answer.status]).toEqual([0, 406]);
    expect(html.answer).toEqual(html.apollo);
    const preferred = await both(body, { accept: 'application/json;q=0.5, application/graphql-response+json' });
    expect(preferred.counted).toBe(0);
    expect(preferred.answer.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
  });

  it('checks the cost of every request against its own variables', async () => {
    const query = 'query Costly($n: Int!) { trainers(limit: $n) { items { creatures(limit: 50) { id } } } }';
    await learn({ query, variables: { n: 2 } });
    const { answer, apollo, counted } = await both({ query, variables: { n: 100 } });
    expect(counted).toBe(0);
    expect(answer).toEqual(apollo);
    expect(answer.status).toBe(400);
    expect(parsed(answer).errors?.[0]).toMatchObject({ message: expect.stringMatching(/cost/), extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('never answers a mutation itself: each runs once, through Apollo', async () => {
    const query =
      'mutation Add($name: String!) { createCreature(trainerId: "' + me.trainer.id + '", input: { name: $name, speciesId: 1 }) { name } }';
    const before = await direct();
    for (let i = 0; i < LEARN + 3; i += 1) {
      const answer = await post({ query, variables: { name: `Mut${i}` } });
      expect(JSON.parse(answer.body)).toEqual({ data: { createCreature: { name: `Mut${i}` } } });
    }
    expect((await direct()) - before).toBe(0);
    const page = await post({ query: `{ trainer(id: "${me.trainer.id}") { creatures(limit: 100) { name } } }` });
    const names = (parsed(page) as GraphQLBody<{ trainer: { creatures: { name: string }[] } }>)
      .data!.trainer.creatures.map((c) => c.name)
      .filter((n) => n.startsWith('Mut'));
    expect(names).toHaveLength(LEARN + 3);
  });
});
