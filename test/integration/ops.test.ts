import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildApp } from '../../src/app';
import { connect } from 'node:net';
import { databases, startTestApp, testConfig, type TestApp } from '../helpers/app';
import { createTrainer } from '../helpers/factories';
import { errorCode, gql, type GraphQLBody, type Problem } from '../helpers/graphql';

describe.each(databases)('operations endpoints and HTTP errors on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { BODY_LIMIT: '2048' });
  });
  afterAll(async () => t.close());

  it('answers /healthz and /readyz while the database answers', async () => {
    const health = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
  });

  it('echoes a given x-request-id and makes one up otherwise', async () => {
    const given = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves the Apollo Sandbox landing page to a browser at GET /graphql in development', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toMatch(/sandbox/i);
  });

  it('sends security headers on every answer, with a policy that allows nothing on the API', async () => {
    for (const url of ['/healthz', '/graphql', '/trainer', '/nowhere']) {
      const res = await t.app.inject({
        method: url === '/graphql' ? 'POST' : 'GET',
        url,
        headers: { 'content-type': 'application/json' },
        payload: url === '/graphql' ? '{"query":"{__typename}"}' : undefined,
      });
      expect([url, res.headers['content-security-policy']]).toEqual([url, expect.stringContaining("default-src 'none'")]);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    }
  });

  it('lets the docs and the development Sandbox load under their own policies', async () => {
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.headers['content-security-policy']).toMatch(/script-src 'self'/);
    const sandbox = await t.app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } });
    expect(sandbox.headers['content-security-policy']).toMatch(/script-src [^;]*https:\/\/embeddable-sandbox\.cdn\.apollographql\.com/);
    const landing = await t.app.inject({ method: 'GET', url: '/graphql/ide/landing.js' });
    expect(landing.body).toContain('https://embeddable-sandbox.cdn.apollographql.com/');
  });

  it('serves the offline IDE and every file it loads from this server', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/graphql/ide' });
    expect(page.statusCode).toBe(200);
    const nonce = /<meta name="style-nonce" content="([^"]+)">/.exec(page.body)?.[1];
    expect(page.headers['content-security-policy']).toContain(`style-src 'self' 'nonce-${nonce}'`);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]).filter((a) => !a.startsWith('data:'));
    expect(assets).toHaveLength(7);
    for (const asset of assets) {
      expect(asset).toMatch(/^\/graphql\/ide\//);
      const res = await t.app.inject({ method: 'GET', url: asset });
      expect([asset, res.statusCode, res.headers['content-type']]).toEqual([asset, 200, expect.stringMatching(/^text\/(javascript|css)/)]);
    }
    // A second page gets another nonce.
    expect((await t.app.inject({ method: 'GET', url: '/graphql/ide' })).body).not.toContain(nonce);
    expect((await t.app.inject({ method: 'GET', url: '/graphql/ide/package.json' })).statusCode).toBe(404);
  });

  it('answers bad JSON on /graphql with 400 BAD_USER_INPUT in GraphQL shape', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json' },
      payload: '{"query": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('answers a body over BODY_LIMIT with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ query: `{ me { id } } #${'x'.repeat(4096)}` }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('rejects a syntax error as BAD_USER_INPUT and an unknown field as GRAPHQL_VALIDATION_FAILED, both with 400', async () => {
    const syntax = await gql(t.app, '{ me { id ');
    expect([syntax.status, errorCode(syntax)]).toEqual([400, 'BAD_USER_INPUT']);
    const unknown = await gql(t.app, '{ me { password } }');
    expect([unknown.status, errorCode(unknown)]).toEqual([400, 'GRAPHQL_VALIDATION_FAILED']);
  });

  it('answers request-level GraphQL mistakes with BAD_USER_INPUT, not an internal error', async () => {
    // Subscriptions are taken over WebSocket only.
    const subscription = await gql(t.app, 'subscription { creatureEvents(trainerId: "1") { kind } }');
    expect(errorCode(subscription)).toBe('BAD_USER_INPUT');
    expect(subscription.status).toBe(400);
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json' },
      payload: { query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } },
    });
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('answers a request the HTTP parser rejects with 400 problem+json', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(address);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect({ port: Number(port), host: '127.0.0.1' }, () => {
        socket.write('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello');
      });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/application\/problem\+json/);
    expect(raw).toContain('"code":"BAD_USER_INPUT"');
  });

  it('keeps CSRF prevention on: a GET query without a preflight header is refused, with it answered', async () => {
    const url = '/graphql?query=%7B__typename%7D';
    const blocked = await t.app.inject({ method: 'GET', url });
    expect(blocked.statusCode).toBe(400);
    expect(blocked.json<GraphQLBody>().errors?.[0]?.message).toMatch(/CSRF/);
    const allowed = await t.app.inject({ method: 'GET', url, headers: { 'apollo-require-preflight': 'true' } });
    expect(allowed.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('rejects a batched (array) request with 400', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]),
    });
    expect(res.statusCode).toBe(400);
  });

  it('answers an unknown path with 404 problem+json', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/nowhere' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('masks an unexpected database error as INTERNAL_SERVER_ERROR with no SQL or driver text', async () => {
    const { token } = await createTrainer(t.app);
    await t.app.dataSource.query('ALTER TABLE creature RENAME TO creature_gone');
    try {
      const res = await gql(t.app, '{ me { creatures { id } } }', {}, token);
      expect(errorCode(res)).toBe('INTERNAL_SERVER_ERROR');
      expect(res.errors![0].message).toBe('Internal server error');
      expect(res.errors![0].extensions).toEqual({ code: 'INTERNAL_SERVER_ERROR' });
      expect(JSON.stringify(res.errors)).not.toMatch(/creature_gone|SELECT|SQLITE_|ER_NO_SUCH|stack|\.ts\b/);
    } finally {
      await t.app.dataSource.query('ALTER TABLE creature_gone RENAME TO creature');
    }
  });

  it('answers GraphQL bodies that are not JSON with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'text/plain' },
      payload: '{ me { id } }',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers methods /graphql does not take with 405 METHOD_NOT_ALLOWED, and a mutation over GET too', async () => {
    const put = await t.app.inject({ method: 'PUT', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: '{}' });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toMatch(/GET, POST/);
    expect(put.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('METHOD_NOT_ALLOWED');
    const get = await t.app.inject({
      method: 'GET',
      url: '/graphql?query=mutation%7B__typename%7D',
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(get.statusCode).toBe(405);
    expect(get.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('reports /readyz 503 SERVICE_UNAVAILABLE and database errors as SERVICE_UNAVAILABLE once the database is gone', async () => {
    const { token } = await createTrainer(t.app);
    await t.app.dataSource.destroy();
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    const res = await gql(t.app, '{ me { id } }', {}, token);
    expect(errorCode(res)).toBe('SERVICE_UNAVAILABLE');
    const rest = await t.app.inject({ method: 'GET', url: '/trainer', headers: { authorization: `Bearer ${token}` } });
    expect(rest.statusCode).toBe(503);
    expect(rest.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(rest.json<Problem>().code).toBe('SERVICE_UNAVAILABLE');
  });
});

describe('CORS', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { CORS_ORIGINS: 'https://app.example.com' });
  });
  afterAll(async () => t.close());

  const preflight = (origin: string) =>
    t.app.inject({
      method: 'OPTIONS',
      url: '/graphql',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    });

  it('lets a listed origin call from a browser', async () => {
    const res = await preflight('https://app.example.com');
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://app.example.com');
    expect(String(res.headers['access-control-allow-headers'])).toMatch(/authorization/i);
  });

  it('gives any other origin no CORS permission', async () => {
    const res = await preflight('https://evil.example.net');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('logging of unexpected errors', () => {
  const lines: string[] = [];
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { LOG_LEVEL: 'info' }, { logStream: { write: (line) => lines.push(line) } });
  });
  afterAll(async () => t.close());

  it('logs the cause with the request id, but no SQL parameters, password hash or token', async () => {
    const { token } = await createTrainer(t.app);
    // A trigger makes the insert of a registration fail unexpectedly, with the hash among its parameters.
    await t.app.dataSource.query(`CREATE TRIGGER no_more BEFORE INSERT ON trainer BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`);
    lines.length = 0;
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': 'trace-me' },
      payload: {
        query: `mutation { registerTrainer(input: { nickname: "logcheck", firstName: "L", lastName: "C",
          email: "log@example.test", password: "very-secret-pw", team: VALOR }) { id } }`,
      },
    });
    expect(res.json<GraphQLBody>().errors?.[0]?.extensions?.code).toBe('INTERNAL_SERVER_ERROR');
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; reqId?: string; err?: { message: string } });
    const entry = logged.find((l) => l.msg === 'unexpected error');
    expect(entry?.err?.message).toContain('disk on fire');
    expect(entry?.reqId).toBe('trace-me');
    const text = lines.join('\n');
    expect(text).not.toMatch(/scrypt\$|very-secret-pw|log@example\.test/);
    expect(text).not.toContain(token);
  });
});

describe('logging of client mistakes', () => {
  const lines: string[] = [];
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { LOG_LEVEL: 'info', NODE_ENV: 'production' }, { logStream: { write: (line) => lines.push(line) } });
  });
  afterAll(async () => t.close());

  it('logs no error for bad variables, syntax, validation or limits, and never the variables', async () => {
    lines.length = 0;
    await gql(t.app, 'mutation($i: RegisterTrainerInput!) { registerTrainer(input: $i) { id } }', {
      i: { nickname: 'leaky', lastName: 'L', email: 'leak@example.test', password: 'RealisticSecret-77', team: 'VALOR' },
    });
    await gql(t.app, '{ me { id ');
    await gql(t.app, '{ nope }');
    await gql(t.app, `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: __typename`).join(' ')} }`);
    const levels = lines.map((l) => (JSON.parse(l) as { level: number }).level);
    expect(levels.filter((level) => level >= 50)).toEqual([]);
    expect(lines.join('\n')).not.toContain('RealisticSecret-77');
  });
});

describe('production mode with GRAPHQL_INTROSPECTION=true', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' });
  });
  afterAll(async () => t.close());

  it('answers introspection, still without the Sandbox', async () => {
    const res = await gql(t.app, '{ __schema { queryType { name } } }');
    expect(res.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
    const page = await t.app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } });
    expect(page.body).not.toMatch(/<html|apollographql\.com/i);
  });
});

describe('production mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite', { NODE_ENV: 'production' });
  });
  afterAll(async () => t.close());

  it('suggests no field names in errors', async () => {
    const { token } = await createTrainer(t.app);
    const res = await gql(t.app, '{ me { nicknam } }', {}, token);
    expect(errorCode(res)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.errors![0].message).not.toMatch(/did you mean|nickname/i);
  });

  it.each([
    ['an enum value in a variable', { team: 'VALORR' }],
    ['an input field in a variable', { nicknam: 'abc' }],
  ])('suggests nothing for %s either, and does not echo the input back', async (_what, override) => {
    const input = {
      nickname: 'abc',
      firstName: 'a',
      lastName: 'b',
      email: 'a@b.co',
      password: 'hunter2-secret',
      team: 'VALOR',
      ...override,
    };
    const res = await gql(t.app, 'mutation($i: RegisterTrainerInput!) { registerTrainer(input: $i) { id } }', { i: input });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].message).not.toMatch(/did you mean|hunter2/i);
    expect(res.errors![0].message).toMatch(/^Variable "\$i" got invalid value/);
  });

  it('suggests nothing for an enum literal', async () => {
    const res = await gql(
      t.app,
      'mutation { registerTrainer(input: { nickname: "abc", firstName: "a", lastName: "b", email: "a@b.co", password: "12345678", team: VALORR }) { id } }',
    );
    expect(errorCode(res)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(res.errors![0].extensions?.fields).toEqual([{ field: 'input.team', message: expect.any(String) }]);
    expect(res.errors![0].message).not.toMatch(/did you mean|VALOR"/i);
  });

  it('answers a browser opening /graphql with a short human message, not the CSRF-prevention error', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(400);
    expect(page.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(page.body).toMatch(/^This is the GraphQL API of the creature registry\. Send POST \/graphql/);
    expect(page.body).not.toMatch(/<html|apollographql\.com|csrf|apollo-require-preflight/i);
    expect(page.body).toContain('GRAPHQL_SANDBOX');
    // A GET that carries a query is still GraphQL's (and still needs a preflight header).
    const get = await t.app.inject({ method: 'GET', url: '/graphql?query=%7B__typename%7D', headers: { 'apollo-require-preflight': '1' } });
    expect(get.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses introspection with a message that names GRAPHQL_INTROSPECTION', async () => {
    for (const query of ['{ __schema { types { name } } }', '{ __type(name: "Trainer") { name } }']) {
      const introspection = await gql(t.app, query);
      expect(introspection.status).toBe(400);
      expect(errorCode(introspection)).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(introspection.errors![0].message).toMatch(/GRAPHQL_INTROSPECTION=false/);
      expect(introspection.errors![0].message).not.toMatch(/ApolloServer/);
    }
    expect((await gql(t.app, '{ __typename }')).data).toEqual({ __typename: 'Query' });
  });
});

describe('the embedded SQLite database', () => {
  it('lives in files only their owner can read, in a folder only the owner can enter', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-files-'));
    const path = join(root, 'data', 'registry.sqlite');
    const app = await buildApp(testConfig(`sqlite:${path}`));
    try {
      await createTrainer(app);
      const mode = (file: string) => statSync(file).mode & 0o777;
      expect([mode(dirname(path)), mode(path), mode(`${path}-wal`)]).toEqual([0o700, 0o600, 0o600]);
    } finally {
      await app.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
