import { connect } from 'node:net';
import { databases, listen, startTestApp, type TestApp } from '../helpers/app';
import { createTrainer, type TrainerFixture } from '../helpers/factories';
import type { GraphQLBody, Problem } from '../helpers/graphql';

/*
 * Anonymous requests that would cost far more than they give: deeply nested JSON and slow
 * senders. Refused cheaply, with a catalogue answer, never a 500.
 */

/** JSON text of `levels` nested arrays around 1 (written as text: a value this deep would overflow JSON.stringify). */
const nested = (levels: number): string => `${'['.repeat(levels)}1${']'.repeat(levels)}`;

/** Sends raw bytes on a new connection, then waits until the server answers and closes it. */
function rawExchange(origin: string, write: (send: (text: string) => void) => void): Promise<string> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.on('connect', () => write((text) => socket.write(text)));
  });
}

describe.each(databases)('abuse limits on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let origin: string;
  beforeAll(async () => {
    t = await startTestApp(kind, {}, { requestTimeoutMs: 1500, idleTimeoutMs: 2000 });
    origin = await listen(t);
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  it('refuses GraphQL variables nested deeper than 64 levels with 400 BAD_USER_INPUT, not a 500', async () => {
    for (const levels of [65, 5000]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
        payload: `{"query": "query($x: [Int]) { me { id } }", "variables": {"x": ${nested(levels)}}}`,
      });
      expect([levels, res.statusCode, res.json<GraphQLBody>().errors?.[0]?.extensions?.code]).toEqual([levels, 400, 'BAD_USER_INPUT']);
    }
    const get = await t.app.inject({
      method: 'GET',
      url: `/graphql?query=${encodeURIComponent('query($x: [Int]) { me { id } }')}&variables=${encodeURIComponent(`{"x": ${nested(3000)}}`)}`,
      headers: { 'apollo-require-preflight': '1', authorization: `Bearer ${me.token}` },
    });
    expect([get.statusCode, get.json<GraphQLBody>().errors?.[0]?.extensions?.code]).toEqual([400, 'BAD_USER_INPUT']);
  });

  it('takes nesting up to 64 levels (then the usual rules apply)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: `{"query": "query($x: JSON) { me { id } }", "variables": {"x": ${nested(62)}}}`,
    });
    // Parsed: the document itself is what graphql-js refuses (there is no JSON type).
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  const graphql = (query: string) =>
    t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${me.token}` },
      payload: { query },
    });

  it.each([
    ['the same field', `{ ${'me { id } '.repeat(249)} }`],
    ['the same fragment spread', `{ me { ${'...F '.repeat(300)} } } fragment F on Trainer { id }`],
    ['the same inline fragment', `{ me { ${'... on Trainer { id } '.repeat(150)} } }`],
    ['the same field, nested', `{ me { ${'id '.repeat(4)} } }`],
  ])('refuses %s repeated in one selection set before validating (quadratic in graphql-js)', async (_what, query) => {
    const res = await graphql(query);
    const body = res.json<GraphQLBody>();
    expect(res.statusCode).toBe(400);
    expect(body.data ?? null).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(body.errors?.[0]?.message).toMatch(/selected more than 3 times/);
  });

  it('takes a field, spread or inline fragment up to 3 times in one selection set', async () => {
    const res = await graphql(
      '{ me { id id ... on Trainer { id } ... on Trainer { nickname } ...F ...F } me { id } } fragment F on Trainer { id }',
    );
    expect(res.json<GraphQLBody>().errors).toBeUndefined();
  });

  const fragments = (count: number) =>
    `{ ${Array.from({ length: count }, (_, i) => `...F${i}`).join(' ')} } ${Array.from({ length: count }, (_, i) => `fragment F${i} on Query { me { id } }`).join(' ')}`;

  it.each([
    ['83 distinct fragments spreading the same field', fragments(83)],
    ['21 distinct fragments', fragments(21)],
    ['120 unused fragments', `{ __typename } ${Array.from({ length: 120 }, (_, i) => `fragment F${i} on Query { __typename }`).join(' ')}`],
  ])('refuses %s before validating (fragment pairs are quadratic in graphql-js)', async (_what, query) => {
    const res = await graphql(query);
    const body = res.json<GraphQLBody>();
    expect(res.statusCode).toBe(400);
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(body.errors?.[0]?.message).toBe('The document defines more than 20 fragments');
  });

  it('takes a document of 20 fragments', async () => {
    const res = await graphql(fragments(20));
    const body = res.json<GraphQLBody>();
    expect(body.errors).toBeUndefined();
    expect(body.data).toEqual({ me: { id: String(me.trainer.id) } });
  });

  it.each([
    ['200 unused variables', `query(${Array.from({ length: 200 }, (_, i) => `$v${i}: Int`).join(' ')}) { __typename }`],
    ['300 unknown fields', `{ ${Array.from({ length: 300 }, (_, i) => `nope${i}`).join(' ')} }`],
  ])('stops validating a document of %s at its 10th error', async (_what, query) => {
    const res = await graphql(query);
    const body = res.json<GraphQLBody>();
    expect(res.statusCode).toBe(400);
    expect(body.errors).toHaveLength(11);
    expect(body.errors?.[10]?.message).toMatch(/Too many validation errors/);
    expect(new Set(body.errors?.map((e) => e.extensions?.code))).toEqual(new Set(['GRAPHQL_VALIDATION_FAILED']));
  });

  it('refuses query text longer than 32,768 characters (comments included) with BAD_USER_INPUT, before parsing it', async () => {
    const long = await graphql(`#${'x'.repeat(32_768)}\n{ __typename }`);
    expect([long.statusCode, long.json<GraphQLBody>().errors?.[0]?.extensions?.code]).toEqual([400, 'BAD_USER_INPUT']);
    const fits = await graphql(`#${'x'.repeat(32_000)}\n{ __typename }`);
    expect(fits.json<GraphQLBody>().data).toEqual({ __typename: 'Query' });
  });

  it('echoes at most 1,000 characters of what the client sent in an error message', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json' },
      payload: { query: '{ __typename }', operationName: ' '.repeat(95_000) },
    });
    const message = res.json<GraphQLBody>().errors?.[0]?.message ?? '';
    expect(res.statusCode).toBe(400);
    expect(message).toMatch(/^Unknown operation named/);
    expect(message.length).toBeLessThanOrEqual(1001);
  });

  it('refuses a REST body nested deeper than 64 levels with a 400 problem', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/trainer',
      headers: { 'content-type': 'application/json' },
      payload: `{"nickname": "deep", "extra": ${nested(100)}}`,
    });
    expect([res.statusCode, res.json<Problem>().code]).toEqual([400, 'BAD_USER_INPUT']);
    expect(res.json<Problem>().detail).toMatch(/deeper than 64/);
  });

  it('refuses a chunked body sent in more than 1,024 chunks with 400 and closes the connection; a few large chunks are fine', async () => {
    const chunked = (pieces: string[]) =>
      rawExchange(origin, (send) => {
        send(
          'POST /trainer/authenticate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
        );
        send(`${pieces.map((piece) => `${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`).join('')}0\r\n\r\n`);
      });
    const body = JSON.stringify({ email: 'nobody@example.test', password: `x${' '.repeat(3000)}` });
    const tiny = await chunked([...body]);
    expect(tiny).toMatch(/^HTTP\/1\.1 400 /);
    expect(tiny).toContain('more than 1024 chunks');
    const few = await chunked([body.slice(0, 1000), body.slice(1000, 2000), body.slice(2000)]);
    expect(few).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('answers a body that trickles in too slowly with 408 and closes the connection', async () => {
    const answer = await rawExchange(origin, (send) => {
      send('POST /trainer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('"code":"REQUEST_TIMEOUT"');
  });

  it('answers a connection that never sends a byte with 408 and closes it, as a request that never arrives', async () => {
    const started = Date.now();
    const answer = await rawExchange(origin, () => undefined);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  });

  it('answers headers that never end with 408 and closes the connection', async () => {
    const answer = await rawExchange(origin, (send) => send('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe.each(databases)('registrations on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { REGISTER_IP_PER_HOUR: '3' });
  });
  afterAll(async () => t.close());

  let n = 0;
  const input = (overrides: Record<string, unknown> = {}) => {
    n += 1;
    return {
      nickname: `reg_${kind}_${n}`,
      firstName: 'R',
      lastName: 'G',
      email: `reg_${kind}_${n}@example.test`,
      password: 'password-1',
      team: 'VALOR',
      ...overrides,
    };
  };
  const viaRest = (body: object, ip: string) => t.app.inject({ method: 'POST', url: '/trainer', remoteAddress: ip, payload: body });
  const viaGraphQL = (body: object, ip: string) =>
    t.app.inject({
      method: 'POST',
      url: '/graphql',
      remoteAddress: ip,
      payload: { query: 'mutation($i: RegisterTrainerInput!) { registerTrainer(input: $i) { id } }', variables: { i: body } },
    });

  it('refuses a taken email or nickname without hashing the password, on both transports', async () => {
    const first = input();
    expect((await viaRest(first, '10.0.0.1')).statusCode).toBe(201);
    const hash = jest.spyOn(t.app.services.hasher, 'hash');
    try {
      const rest = await viaRest(input({ email: first.email.toUpperCase() }), '10.0.0.2');
      expect([rest.statusCode, rest.json<Problem>().code]).toEqual([409, 'TRAINER_ALREADY_EXISTS']);
      const graphql = await viaGraphQL(input({ nickname: first.nickname.toUpperCase() }), '10.0.0.3');
      expect(graphql.json<GraphQLBody>().errors?.[0]?.extensions).toMatchObject({
        code: 'TRAINER_ALREADY_EXISTS',
        fields: [{ field: 'nickname', message: expect.any(String) }],
      });
      expect(hash).not.toHaveBeenCalled();
      expect((await viaRest(input(), '10.0.0.2')).statusCode).toBe(201);
      expect(hash).toHaveBeenCalledTimes(1);
    } finally {
      hash.mockRestore();
    }
  });

  it('allows REGISTER_IP_PER_HOUR attempts per address, successful or not, over both transports; then RATE_LIMITED with Retry-After', async () => {
    const ip = '10.0.1.1';
    expect((await viaRest(input(), ip)).statusCode).toBe(201);
    expect((await viaRest(input({ password: 'short' }), ip)).statusCode).toBe(400);
    expect((await viaGraphQL(input(), ip)).json<GraphQLBody>().errors).toBeUndefined();
    const rest = await viaRest(input(), ip);
    expect([rest.statusCode, rest.json<Problem>().code]).toEqual([429, 'RATE_LIMITED']);
    expect(Number(rest.headers['retry-after'])).toBeGreaterThan(0);
    const graphql = (await viaGraphQL(input(), ip)).json<GraphQLBody>().errors?.[0]?.extensions;
    expect(graphql).toMatchObject({ code: 'RATE_LIMITED', retryAfter: expect.any(Number) });
    // Another address is not held to this one's count.
    expect((await viaRest(input(), '10.0.1.2')).statusCode).toBe(201);
  });
});

describe.each(databases)('refusals held back on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { REGISTER_IP_PER_HOUR: '1', RATE_LIMITED_DELAY_MS: '400' });
  });
  afterAll(async () => t.close());

  const register = (ip: string, n: number) =>
    t.app.inject({
      method: 'POST',
      url: '/trainer',
      remoteAddress: ip,
      payload: {
        nickname: `held_${n}`,
        firstName: 'H',
        lastName: 'B',
        email: `held_${n}@example.test`,
        password: 'password-1',
        team: 'VALOR',
      },
    });

  it('answers RATE_LIMITED only after RATE_LIMITED_DELAY_MS, so a client flooding in a loop gets few answers', async () => {
    expect((await register('10.0.2.1', 1)).statusCode).toBe(201);
    const sent = Date.now();
    const refused = await Promise.all([2, 3, 4].map((n) => register('10.0.2.1', n)));
    const took = Date.now() - sent;
    expect(refused.map((res) => [res.statusCode, res.json<Problem>().code])).toEqual(Array(3).fill([429, 'RATE_LIMITED']));
    expect(took).toBeGreaterThanOrEqual(400);
    expect(await t.app.dataSource.query('SELECT nickname FROM trainer WHERE nickname LIKE ?', ['held_%'])).toEqual([
      { nickname: 'held_1' },
    ]);
  });
});
