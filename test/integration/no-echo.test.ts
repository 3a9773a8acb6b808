import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createTrainer, type TrainerFixture } from '../helpers/factories';
import type { GraphQLBody, Problem } from '../helpers/graphql';

/*
 * A refused value is never written back to the client (it may be a password): not in GraphQL's
 * own coercion and validation messages, not in `extensions.fields`, not in a REST problem's
 * `detail` or `fields`. What was wrong stays said: the variable, the field, the rule.
 */
const SECRET = 'Zq9SecretTail';
const REGISTRATION = 'mutation($i: RegisterTrainerInput!) { registerTrainer(input: $i) { id } }';
const valid = {
  nickname: 'echo_test',
  firstName: 'A',
  lastName: 'B',
  email: 'echo@example.test',
  password: 'long-enough-1',
  team: 'VALOR',
};
const { team: _team, ...withoutTeam } = valid;

describe.each(databases)('no echo of refused values on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const graphql = async (query: string, variables?: Record<string, unknown>) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: JSON.stringify({ query, variables }),
    });
    return { status: response.statusCode, text: response.body, body: response.json<GraphQLBody>() };
  };

  it.each([
    [
      'a password beside a missing required field',
      REGISTRATION,
      { i: { ...withoutTeam, password: `hunter2; ${SECRET}` } },
      /^Variable "\$i" got invalid value; Field "team" of required type "Team!" was not provided\.$/,
    ],
    [
      'a value that looks like the message itself',
      REGISTRATION,
      { i: { ...withoutTeam, password: `x" } at "i.nickname"; Field ${SECRET}` } },
      /^Variable "\$i" got invalid value; Field "team" of required type "Team!" was not provided\.$/,
    ],
    [
      'an object where a string belongs',
      REGISTRATION,
      { i: { ...valid, password: { value: SECRET } } },
      /^Variable "\$i" got invalid value at "i\.password"; String cannot represent a non string value\.$/,
    ],
    [
      'an unknown enum value',
      REGISTRATION,
      { i: { ...valid, team: SECRET } },
      /^Variable "\$i" got invalid value at "i\.team"; Value does not exist in "Team" enum\./,
    ],
    [
      'a number where an enum belongs',
      REGISTRATION,
      { i: { ...valid, team: 7 } },
      /^Variable "\$i" got invalid value at "i\.team"; Enum "Team" cannot represent non-string value\.$/,
    ],
    [
      'a string where an Int belongs',
      'query($n: Int!) { trainers(limit: $n) { totalCount } }',
      { n: SECRET },
      /^Variable "\$n" got invalid value; Int cannot represent non-integer value\.$/,
    ],
    [
      'a list where an ID belongs',
      'query($id: ID!) { trainer(id: $id) { id } }',
      { id: { x: SECRET } },
      /^Variable "\$id" got invalid value; ID cannot represent value\.$/,
    ],
    [
      'a string where a Boolean belongs',
      'mutation($e: Boolean!) { logout(everywhere: $e) }',
      { e: SECRET },
      /^Variable "\$e" got invalid value; Boolean cannot represent a non boolean value\.$/,
    ],
    [
      'an Int field of an input given text',
      'mutation($c: CreateCreatureInput!) { createCreature(trainerId: "1", input: $c) { id } }',
      { c: { name: 'Ok', speciesId: SECRET } },
      /^Variable "\$c" got invalid value at "c\.speciesId"; Int cannot represent non-integer value\.$/,
    ],
    [
      'a string literal where an enum belongs',
      `{ trainers(filter: { team: "${SECRET}" }) { totalCount } }`,
      undefined,
      /^Enum "Team" cannot represent non-enum value\.$/,
    ],
    [
      'an unknown enum literal',
      `{ trainers(filter: { team: ${SECRET} }) { totalCount } }`,
      undefined,
      /^Value does not exist in "Team" enum\./,
    ],
    [
      'an enum literal where a string belongs',
      `{ trainers(after: ${SECRET}) { totalCount } }`,
      undefined,
      /^String cannot represent a non string value\.$/,
    ],
    [
      'a string literal where an Int belongs',
      `{ trainers(limit: "${SECRET}") { totalCount } }`,
      undefined,
      /^Int cannot represent non-integer value\.$/,
    ],
    [
      'an object literal where a string belongs',
      `{ trainers(after: { a: "${SECRET}" }) { totalCount } }`,
      undefined,
      /^String cannot represent a non string value\.$/,
    ],
    [
      'values the rules refuse',
      REGISTRATION,
      { i: { ...valid, nickname: `${SECRET}!`, email: `${SECRET}@`, password: `${SECRET}\u0000` } },
      /^Invalid input: .*nickname/,
    ],
  ])('GraphQL: %s', async (_name, query, variables, message) => {
    const answer = await graphql(query, variables);
    // 400 when the request is refused whole, 200 when a resolver's arguments are (the rules').
    expect([200, 400]).toContain(answer.status);
    expect(answer.text.toLowerCase()).not.toContain(SECRET.toLowerCase());
    expect(answer.body.errors?.[0].message).toMatch(message);
    expect(['BAD_USER_INPUT', 'GRAPHQL_VALIDATION_FAILED']).toContain(answer.body.errors?.[0].extensions?.code);
  });

  it('keeps the field of a refused variable in extensions.fields', async () => {
    const answer = await graphql(REGISTRATION, { i: { ...valid, team: SECRET } });
    expect(answer.body.errors?.[0].extensions?.fields).toEqual([{ field: 'i.team', message: expect.stringContaining('"Team"') }]);
  });

  it.each([
    ['POST /trainer', '/trainer', { ...valid, nickname: `${SECRET}!`, email: SECRET, password: { value: SECRET }, team: SECRET }],
    [
      'POST /trainer with text where a name belongs',
      '/trainer',
      { ...valid, firstName: 7, lastName: [SECRET], password: `${SECRET}\u0000` },
    ],
    ['POST /trainer/authenticate', '/trainer/authenticate', { email: SECRET, password: 7 }],
    ['POST /trainer/authenticate/refresh', '/trainer/authenticate/refresh', { refreshToken: { value: SECRET } }],
  ])('REST: %s', async (_name, url, body) => {
    const response = await t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
    expect(response.statusCode).toBe(400);
    expect(response.body.toLowerCase()).not.toContain(SECRET.toLowerCase());
    const problem = response.json<Problem>();
    expect(problem.code).toBe('BAD_USER_INPUT');
    expect(problem.fields?.length).toBeGreaterThan(0);
  });

  it('REST: a body that is not JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/trainer/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: `{"email": "a@b.co", "password": "${SECRET}`,
    });
    expect(response.statusCode).toBe(400);
    expect(response.body.toLowerCase()).not.toContain(SECRET.toLowerCase());
  });

  it('REST: a PATCH with text where a number belongs', async () => {
    const response = await t.app.inject({
      method: 'PATCH',
      url: `/trainer/${me.trainer.id}/creature/1`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: JSON.stringify({ level: SECRET, name: { value: SECRET } }),
    });
    expect(response.statusCode).toBe(400);
    expect(response.body.toLowerCase()).not.toContain(SECRET.toLowerCase());
    expect(
      response
        .json<Problem>()
        .fields?.map((f) => f.field)
        .sort(),
    ).toEqual(['level', 'name']);
  });
});
