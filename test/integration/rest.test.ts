import { connect } from 'node:net';
import { Creature } from '../../src/creatures/creature.entity';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import type { Problem } from '../helpers/graphql';
import { createCreature, createTrainer, signIn, TEST_PASSWORD, unique, type TrainerFixture } from '../helpers/factories';

/* What only the REST shim has: statuses and headers, problem+json, media types, methods, docs. */

describe.each(databases)('REST shim on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  let other: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind, { BODY_LIMIT: '4096' });
    me = await createTrainer(t.app);
    other = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const auth = (fixture: TrainerFixture) => ({ authorization: `Bearer ${fixture.token}` });

  function expectProblem(
    res: { statusCode: number; headers: Record<string, unknown>; json<T>(): T },
    status: number,
    code: string,
  ): Problem {
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json<Problem>();
    expect(body).toMatchObject({ status, code, type: expect.any(String), title: expect.any(String), detail: expect.any(String) });
    return body;
  }

  it('registers with 201 and the trainer with its email, never its password hash', async () => {
    const nickname = unique('rest_');
    const res = await t.app.inject({
      method: 'POST',
      url: '/trainer',
      payload: {
        nickname,
        firstName: 'Rest',
        lastName: 'Client',
        email: `${nickname}@example.test`,
        password: 'legacy-client',
        team: 'VALOR',
      },
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json<Record<string, unknown>>();
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'creaturesOwned', 'email', 'firstName', 'id', 'lastName', 'nickname', 'team']);
    expect(body).toMatchObject({ nickname, email: `${nickname}@example.test`, creaturesOwned: 0 });
    expect(typeof body.id).toBe('number');
    expect(res.body).not.toMatch(/scrypt|password/i);
  });

  it('creates a creature with 201 and a Location that reads it back', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: auth(me),
      payload: { name: unique('Loc'), speciesId: 7, level: 12 },
    });
    expect(res.statusCode).toBe(201);
    const creature = res.json<{ id: number }>();
    expect(Object.keys(creature).sort()).toEqual(['createdAt', 'id', 'level', 'name', 'speciesId', 'trainerId']);
    expect(res.headers.location).toBe(`/trainer/${me.trainer.id}/creature/${creature.id}`);
    const again = await t.app.inject({ method: 'GET', url: String(res.headers.location), headers: auth(me) });
    expect(again.json()).toEqual(creature);
  });

  it('deletes with 204 and no body', async () => {
    const made = await createCreature(t.app, me.trainer.id);
    const res = await t.app.inject({ method: 'DELETE', url: `/trainer/${me.trainer.id}/creature/${made.id}`, headers: auth(me) });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
  });

  it('updates with PATCH as plain JSON or as JSON Merge Patch, and takes merge patches on PATCH only', async () => {
    const made = await createCreature(t.app, me.trainer.id, { level: 3 });
    const url = `/trainer/${me.trainer.id}/creature/${made.id}`;
    for (const [contentType, level] of [
      ['application/json', 4],
      ['application/merge-patch+json', 5],
      ['application/merge-patch+json; charset=utf-8', 6],
    ] as const) {
      const res = await t.app.inject({ method: 'PATCH', url, headers: { ...auth(me), 'content-type': contentType }, payload: { level } });
      expect([contentType, res.statusCode]).toEqual([contentType, 200]);
      expect(res.json()).toEqual({
        id: made.id,
        name: made.name,
        speciesId: made.speciesId,
        level,
        trainerId: me.trainer.id,
        createdAt: made.createdAt.toISOString(),
      });
    }
    const text = await t.app.inject({
      method: 'PATCH',
      url,
      headers: { ...auth(me), 'content-type': 'text/plain' },
      payload: '{"level":7}',
    });
    expectProblem(text, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const post = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: { ...auth(me), 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ name: unique('mp'), speciesId: 1 }),
    });
    expectProblem(post, 415, 'UNSUPPORTED_MEDIA_TYPE');
    const none = await t.app.inject({ method: 'PATCH', url, headers: auth(me) });
    expectProblem(none, 400, 'BAD_USER_INPUT');
    const empty = await t.app.inject({ method: 'PATCH', url, headers: { ...auth(me), 'content-type': 'application/json' }, payload: '' });
    expectProblem(empty, 400, 'BAD_USER_INPUT');
    expect((await t.app.dataSource.getRepository(Creature).findOneByOrFail({ id: made.id })).level).toBe(6);
  });

  it('logs out with 204 and no body, with or without a JSON body; a body of the wrong shape is 400 and logs nobody out', async () => {
    // No body, an empty body under a JSON content type (clients that always send the header), {} and an explicit false.
    for (const payload of [undefined, '', {}, { everywhere: false }]) {
      const { token } = await signIn(t.app, me.trainer.id);
      const res = await t.app.inject({
        method: 'POST',
        url: '/trainer/logout',
        headers: { authorization: `Bearer ${token}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(payload !== undefined ? { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) } : {}),
      });
      expect([payload, res.statusCode, res.body]).toEqual([payload, 204, '']);
      const after = await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: { authorization: `Bearer ${token}` } });
      expectProblem(after, 401, 'UNAUTHENTICATED');
    }
    const { token } = await signIn(t.app, me.trainer.id);
    for (const payload of [{ everywhere: 'yes' }, { everywhere: true, extra: 1 }, [true]]) {
      const res = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${token}` }, payload });
      expectProblem(res, 400, 'BAD_USER_INPUT');
    }
    const still = await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: { authorization: `Bearer ${token}` } });
    expect(still.statusCode).toBe(200);
  });

  it('answers a logged-out token 401 before anything about its input, on the routes that check the caller with their read', async () => {
    const { token } = await signIn(t.app, me.trainer.id);
    const headers = { authorization: `Bearer ${token}` };
    const bad = ['/trainer?limit=abc', '/trainer?offset=-1&team=NONE', '/trainer/abc', '/trainer/1.5'];
    for (const url of bad) expectProblem(await t.app.inject({ method: 'GET', url, headers }), 400, 'BAD_USER_INPUT');
    const logout = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers });
    expect(logout.statusCode).toBe(204);
    for (const url of [...bad, '/trainer?limit=5', `/trainer/${me.trainer.id}`]) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      expect([url, res.statusCode]).toEqual([url, 401]);
      expectProblem(res, 401, 'UNAUTHENTICATED');
    }
  });

  it('answers NOT_FOUND for a creature that belongs to another trainer than the path’s, on GET, PATCH and DELETE', async () => {
    const theirs = await createCreature(t.app, other.trainer.id);
    expectProblem(
      await t.app.inject({
        method: 'PATCH',
        url: `/trainer/${me.trainer.id}/creature/${theirs.id}`,
        headers: auth(me),
        payload: { name: 'Taken' },
      }),
      404,
      'NOT_FOUND',
    );
    expectProblem(
      await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}/creature/${theirs.id}`, headers: auth(me) }),
      404,
      'NOT_FOUND',
    );
    expectProblem(
      await t.app.inject({ method: 'DELETE', url: `/trainer/${me.trainer.id}/creature/${theirs.id}`, headers: auth(me) }),
      404,
      'NOT_FOUND',
    );
    expect(await t.app.dataSource.getRepository(Creature).findOneByOrFail({ id: theirs.id })).toMatchObject({ name: theirs.name });
  });

  it('shows another trainer’s email to nobody, in lists too', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/trainer?limit=100', headers: auth(me) });
    expect(res.statusCode).toBe(200);
    const page = res.json<{ items: { id: number; email?: string }[] }>();
    expect(Object.keys(page).sort()).toEqual(['items', 'limit', 'nextCursor', 'offset', 'totalCount']);
    for (const item of page.items) {
      if (item.id === me.trainer.id) expect(item.email).toBe(me.email);
      else expect(item).not.toHaveProperty('email');
    }
  });

  it('sends each trainer of a page as GET /trainer/:id sends it, odd names, whole seconds and changed counts included, the caller with its email', async () => {
    const odd = await createTrainer(t.app, {
      firstName: 'Zoë "Zed" \\ O’Neil/',
      lastName: '李 😀 </script> ẞ',
      createdAt: new Date('2026-01-02T03:04:05.000Z'),
    });
    const next = await createTrainer(t.app, { firstName: 'Tab\u00a0Less', createdAt: new Date('2026-01-02T03:04:05.007Z') });
    // Its count changes after its row was written: the page shows the count as it now is.
    const created: number[] = [];
    for (const name of ['Keep', 'Gone']) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/trainer/${odd.trainer.id}/creature`,
        headers: auth(odd),
        payload: { name, speciesId: 1 },
      });
      expect(res.statusCode).toBe(201);
      created.push(res.json<{ id: number }>().id);
    }
    const gone = await t.app.inject({ method: 'DELETE', url: `/trainer/${odd.trainer.id}/creature/${created[1]}`, headers: auth(odd) });
    expect(gone.statusCode).toBe(204);
    const [before] = await t.app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer WHERE id < ?', [
      odd.trainer.id,
    ]);
    const single = async (id: number, viewer: TrainerFixture) =>
      (await t.app.inject({ method: 'GET', url: `/trainer/${id}`, headers: auth(viewer) })).json<Record<string, unknown>>();
    // Pages of 2 and 3 go through the merged reads, one of 40 takes a statement of its own.
    for (const [limit, offset] of [
      [2, Number(before.n)],
      [3, Number(before.n) - 1],
      [40, Math.max(0, Number(before.n) - 20)],
    ]) {
      for (const viewer of [odd, next]) {
        const res = await t.app.inject({ method: 'GET', url: `/trainer?limit=${limit}&offset=${offset}`, headers: auth(viewer) });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        const page = res.json<{ items: { id: number }[]; limit: number; offset: number }>();
        expect(Object.keys(page).sort()).toEqual(['items', 'limit', 'nextCursor', 'offset', 'totalCount']);
        expect(page).toMatchObject({ limit, offset });
        expect(page.items.map((item) => item.id)).toEqual(expect.arrayContaining([odd.trainer.id, next.trainer.id]));
        // Each item has the values the single trainer's route sends, and no others (in whatever key order).
        const expected = await Promise.all(page.items.map((item) => single(item.id, viewer)));
        expect(page.items).toStrictEqual(expected);
        expect(page.items.find((item) => item.id === viewer.trainer.id)).toMatchObject({ email: viewer.email });
        expect(page.items.filter((item) => 'email' in item)).toHaveLength(1);
      }
    }
    expect(await single(odd.trainer.id, odd)).toMatchObject({
      firstName: 'Zoë "Zed" \\ O’Neil/',
      lastName: '李 😀 </script> ẞ',
      createdAt: '2026-01-02T03:04:05.000Z',
      creaturesOwned: 1,
    });
  });

  it.each(['abc', '-1', '1e3', '1.5', '99999999999999999999', "1'%20OR%20'1'='1", '%20'])(
    'answers 400 BAD_USER_INPUT for the path id %s',
    async (id) => {
      const body = expectProblem(await t.app.inject({ method: 'GET', url: `/trainer/${id}`, headers: auth(me) }), 400, 'BAD_USER_INPUT');
      expect(body.fields).toEqual([{ field: 'trainerId', message: expect.any(String) }]);
    },
  );

  it.each(['limit=1e1', 'limit=', 'limit=ten', 'offset=0x10', 'limit=5&limit=6', 'offset=-1'])(
    'answers 400 for the query %s',
    async (query) => {
      expectProblem(await t.app.inject({ method: 'GET', url: `/trainer?${query}`, headers: auth(me) }), 400, 'BAD_USER_INPUT');
    },
  );

  it('takes JSON bodies as typed: a string for a number, or an unknown field, is 400 with the field named', async () => {
    const url = `/trainer/${me.trainer.id}/creature`;
    const typed = expectProblem(
      await t.app.inject({ method: 'POST', url, headers: auth(me), payload: { name: 'a', speciesId: '5' } }),
      400,
      'BAD_USER_INPUT',
    );
    expect(typed.fields).toEqual([{ field: 'speciesId', message: expect.any(String) }]);
    const unknown = expectProblem(
      await t.app.inject({ method: 'POST', url, headers: auth(me), payload: { name: 'a', speciesId: 5, trainerId: other.trainer.id } }),
      400,
      'BAD_USER_INPUT',
    );
    expect(unknown.fields).toEqual([{ field: 'trainerId', message: 'is not a known field' }]);
  });

  it('words a broken rule in the problem’s fields, not as the pattern openapi.json states', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: auth(me),
      payload: { name: 'Mew\u200D', speciesId: 1 },
    });
    const problem = expectProblem(res, 400, 'BAD_USER_INPUT');
    expect(problem.fields).toEqual([
      {
        field: 'name',
        message:
          'must be 1 to 32 characters once the spaces around it are trimmed, without control, format or invisible characters or variation selectors, and not start with a combining mark',
      },
    ]);
  });

  it('says what is wrong with a refused request: a repeated parameter, a leading zero, a missing body, a forbidden key, a scheme other than Bearer', async () => {
    const repeated = expectProblem(
      await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}/creature?limit=3&limit=4`, headers: auth(me) }),
      400,
      'BAD_USER_INPUT',
    );
    expect(repeated.fields).toEqual([{ field: 'limit', message: 'is given more than once' }]);
    const zero = expectProblem(
      await t.app.inject({ method: 'GET', url: `/trainer/0${me.trainer.id}`, headers: auth(me) }),
      400,
      'BAD_USER_INPUT',
    );
    expect(zero.fields).toEqual([{ field: 'trainerId', message: 'must be a decimal integer, without leading zeros' }]);
    const bodiless = expectProblem(
      await t.app.inject({ method: 'DELETE', url: `/trainer/${me.trainer.id}`, headers: auth(me) }),
      400,
      'BAD_USER_INPUT',
    );
    expect(bodiless.fields).toEqual([{ field: 'body', message: 'is required: send a JSON object' }]);
    const poisoned = expectProblem(
      await t.app.inject({
        method: 'POST',
        url: `/trainer/${me.trainer.id}/creature`,
        headers: { ...auth(me), 'content-type': 'application/json' },
        payload: '{"name":"Proto","speciesId":5,"__proto__":{"level":99}}',
      }),
      400,
      'BAD_USER_INPUT',
    );
    expect(poisoned.detail).toBe('JSON bodies may not use the keys __proto__ or constructor.prototype');
    const broken = expectProblem(
      await t.app.inject({ method: 'POST', url: '/trainer', headers: { 'content-type': 'application/json' }, payload: '{"nickname":' }),
      400,
      'BAD_USER_INPUT',
    );
    expect(broken.detail).not.toMatch(/__proto__/);
    const basic = expectProblem(
      await t.app.inject({ method: 'GET', url: '/trainer', headers: { authorization: 'Basic dXNlcjpwYXNz' } }),
      401,
      'UNAUTHENTICATED',
    );
    expect(basic.detail).toBe('Only Bearer tokens are taken: send Authorization: Bearer <token>');
    const bad = expectProblem(
      await t.app.inject({ method: 'GET', url: '/trainer', headers: { authorization: 'Bearer a.b.c' } }),
      401,
      'UNAUTHENTICATED',
    );
    expect(bad.detail).toBe('Invalid or expired token');
    // Nothing was deleted or created by the refused requests.
    expect((await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: auth(me) })).statusCode).toBe(200);
    const names = (await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}/creature?limit=100`, headers: auth(me) })).json<{
      items: { name: string }[];
    }>();
    expect(names.items.map((c) => c.name)).not.toContain('Proto');
  });

  it.each([
    ['text/plain', 'name=x'],
    ['application/x-www-form-urlencoded', 'name=x&speciesId=1'],
    ['application/xml', '<creature/>'],
  ])('answers 415 UNSUPPORTED_MEDIA_TYPE to a %s body', async (type, payload) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: { ...auth(me), 'content-type': type },
      payload,
    });
    expectProblem(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers 400 to malformed JSON and 413 to a body over the limit', async () => {
    const headers = { 'content-type': 'application/json' };
    expectProblem(await t.app.inject({ method: 'POST', url: '/trainer', headers, payload: '{"nickname":' }), 400, 'BAD_USER_INPUT');
    const big = JSON.stringify({ nickname: 'x'.repeat(5000) });
    expectProblem(await t.app.inject({ method: 'POST', url: '/trainer', headers, payload: big }), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('takes JSON only as UTF-8: another charset is 415, bytes that are not UTF-8 are 400, and nothing is stored', async () => {
    const nickname = unique('utf_');
    const json = `{"nickname":"${nickname}","firstName":"Jos\u00e9","lastName":"X","email":"${nickname}@example.test","password":"secret-pass","team":"VALOR"}`;
    const latin1 = Buffer.from(json, 'latin1');
    expectProblem(
      await t.app.inject({
        method: 'POST',
        url: '/trainer',
        headers: { 'content-type': 'application/json; charset=latin1' },
        payload: latin1,
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expectProblem(
      await t.app.inject({ method: 'POST', url: '/trainer', headers: { 'content-type': 'application/json' }, payload: latin1 }),
      400,
      'BAD_USER_INPUT',
    );
    const utf8 = await t.app.inject({
      method: 'POST',
      url: '/trainer',
      headers: { 'content-type': 'application/json; charset=UTF-8' },
      payload: Buffer.from(json, 'utf8'),
    });
    expect(utf8.statusCode).toBe(201);
    expect(utf8.json<{ firstName: string }>().firstName).toBe('José');
  });

  it('answers a method a path does not take with 405 and an Allow header', async () => {
    const put = await t.app.inject({ method: 'PUT', url: `/trainer/${me.trainer.id}`, headers: auth(me), payload: {} });
    expectProblem(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.headers.allow).toBe('GET, PATCH, DELETE, HEAD, OPTIONS');
    const get = await t.app.inject({ method: 'GET', url: '/trainer/authenticate' });
    expectProblem(get, 405, 'METHOD_NOT_ALLOWED');
    expect(get.headers.allow).toBe('POST, OPTIONS');
    const put2 = await t.app.inject({ method: 'PUT', url: `/trainer/1/creature/2` });
    expect(put2.headers.allow).toBe('GET, PATCH, DELETE, HEAD, OPTIONS');
    const logout = await t.app.inject({ method: 'GET', url: '/trainer/logout', headers: auth(me) });
    expectProblem(logout, 405, 'METHOD_NOT_ALLOWED');
    expect(logout.headers.allow).toBe('POST, OPTIONS');
    const options = await t.app.inject({ method: 'OPTIONS', url: '/trainer' });
    expect(options.statusCode).toBe(204);
    expect(options.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
  });

  it.each(['TRACE', 'QUERY', 'PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'SEARCH'])(
    'answers 405 with Allow for %s, a method none of the paths takes',
    async (method) => {
      for (const [url, allow] of [
        ['/trainer', 'GET, POST, HEAD, OPTIONS'],
        ['/trainer/authenticate', 'POST, OPTIONS'],
        [`/trainer/${me.trainer.id}/creature/1`, 'GET, PATCH, DELETE, HEAD, OPTIONS'],
        ['/trainer/authenticate/refresh', 'POST, OPTIONS'],
      ]) {
        const res = await t.app.inject({ method: method as 'GET', url, headers: auth(me) });
        expectProblem(res, 405, 'METHOD_NOT_ALLOWED');
        expect([url, res.headers.allow]).toEqual([url, allow]);
      }
    },
  );

  it('answers HEAD on a path without GET with 405', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: '/trainer/authenticate' });
    expect([res.statusCode, res.headers.allow]).toEqual([405, 'POST, OPTIONS']);
  });

  it('marks every answer of the API as not to be stored (Cache-Control: no-store), and only those', async () => {
    const answers = [
      await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}`, headers: auth(me) }),
      await t.app.inject({ method: 'GET', url: '/trainer', headers: auth(me) }),
      await t.app.inject({ method: 'GET', url: '/trainer' }),
      await t.app.inject({ method: 'POST', url: '/trainer/authenticate', payload: { email: me.email, password: TEST_PASSWORD } }),
      await t.app.inject({ method: 'POST', url: '/graphql', headers: auth(me), payload: { query: '{ me { id } }' } }),
      await t.app.inject({
        method: 'POST',
        url: '/graphql',
        payload: { query: `mutation { authenticate(email: "${me.email}", password: "${TEST_PASSWORD}") { token } }` },
      }),
    ];
    expect(answers.map((res) => [res.statusCode, res.headers['cache-control']])).toEqual([
      [200, 'no-store'],
      [200, 'no-store'],
      [401, 'no-store'],
      [200, 'no-store'],
      [200, 'no-store'],
      [200, 'no-store'],
    ]);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).headers['cache-control']).toBeUndefined();
  });

  it('answers 405 before reading the body, whatever its type', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/trainer', headers: { 'content-type': 'text/plain' }, payload: 'x' });
    expectProblem(res, 405, 'METHOD_NOT_ALLOWED');
  });

  it('answers 500 and 503 as problem+json with nothing of the cause', async () => {
    const own = await createTrainer(t.app);
    await t.app.dataSource.query('ALTER TABLE creature RENAME TO creature_moved');
    try {
      const res = await t.app.inject({ method: 'GET', url: `/trainer/${own.trainer.id}/creature`, headers: auth(own) });
      const body = expectProblem(res, 500, 'INTERNAL_SERVER_ERROR');
      expect(body.detail).toBe('Internal server error');
      expect(res.body).not.toMatch(/creature_moved|SELECT|SQLITE_|ER_NO_SUCH/);
    } finally {
      await t.app.dataSource.query('ALTER TABLE creature_moved RENAME TO creature');
    }
  });

  it('answers malformed URLs and very long ids with 400 problem+json', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/trainer/%E0%A4%A', headers: auth(me) }), 400, 'BAD_USER_INPUT');
    expectProblem(await t.app.inject({ method: 'GET', url: `/trainer/${'1'.repeat(1100)}`, headers: auth(me) }), 400, 'BAD_USER_INPUT');
  });

  it('answers a path escaping the docs folder with 403 FORBIDDEN, not a server error', async () => {
    // Sent as is over a socket: inject() would tidy the dots away.
    const address = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect({ port: Number(address.port), host: '127.0.0.1' }, () =>
        socket.write('GET /docs/static/../package.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      );
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 403 /);
    expect(raw).toContain('"code":"FORBIDDEN"');
  });

  it('answers an unknown path with 404 problem+json', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/trainers/1' }), 404, 'NOT_FOUND');
    expectProblem(
      await t.app.inject({ method: 'GET', url: `/trainer/${me.trainer.id}/creature/1/extra`, headers: auth(me) }),
      404,
      'NOT_FOUND',
    );
  });

  it('hides which part of the input was wrong from a caller without a token: 401 comes first', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/trainer/abc/creature', payload: { nope: true } });
    expectProblem(res, 401, 'UNAUTHENTICATED');
  });

  it('says how to authenticate on every 401 (WWW-Authenticate: Bearer), and that a sent token was refused', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/trainer' });
    expectProblem(none, 401, 'UNAUTHENTICATED');
    expect(none.headers['www-authenticate']).toBe('Bearer realm="creature-registry"');
    for (const authorization of ['Bearer not.a.token', `Bearer ${me.token}x`, 'Basic dXNlcjpwYXNz']) {
      for (const url of ['/trainer', `/trainer/${me.trainer.id}`]) {
        const refused = await t.app.inject({ method: 'GET', url, headers: { authorization } });
        expectProblem(refused, 401, 'UNAUTHENTICATED');
        expect([url, refused.headers['www-authenticate']]).toEqual([url, 'Bearer realm="creature-registry", error="invalid_token"']);
      }
    }
    const wrongPassword = await t.app.inject({
      method: 'POST',
      url: '/trainer/authenticate',
      payload: { email: me.email, password: 'not-the-password' },
    });
    expectProblem(wrongPassword, 401, 'UNAUTHENTICATED');
    expect(wrongPassword.headers['www-authenticate']).toBe('Bearer realm="creature-registry"');
    expect((await t.app.inject({ method: 'GET', url: '/trainer', headers: auth(me) })).headers['www-authenticate']).toBeUndefined();
  });
});

describe('OpenAPI and Swagger UI', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('sqlite');
  });
  afterAll(async () => t.close());

  it('serves an OpenAPI 3.1 document of all fourteen routes with bearer auth and their error answers', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<{ openapi: string; components: { securitySchemes: Record<string, unknown> }; paths: unknown }>();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    const operations = Object.entries(
      doc.paths as Record<
        string,
        Record<string, { responses: Record<string, unknown>; security?: unknown; requestBody?: { required: boolean } }>
      >,
    ).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })));
    expect(operations.map((o) => o.key).sort()).toEqual([
      'DELETE /trainer/{trainerId}',
      'DELETE /trainer/{trainerId}/creature/{creatureId}',
      'GET /trainer',
      'GET /trainer/{trainerId}',
      'GET /trainer/{trainerId}/creature',
      'GET /trainer/{trainerId}/creature/{creatureId}',
      'PATCH /trainer/{trainerId}',
      'PATCH /trainer/{trainerId}/creature/{creatureId}',
      'POST /trainer',
      'POST /trainer/authenticate',
      'POST /trainer/authenticate/refresh',
      'POST /trainer/logout',
      'POST /trainer/{trainerId}/creature',
      'POST /trainer/{trainerId}/password',
    ]);
    const statuses = Object.fromEntries(operations.map(({ key, op }) => [key, Object.keys(op.responses).join(' ')]));
    expect(statuses).toEqual({
      'POST /trainer': '201 400 409 413 415 429 500 503',
      'POST /trainer/authenticate': '200 400 401 413 415 429 500 503',
      'GET /trainer': '200 400 401 500 503',
      'GET /trainer/{trainerId}': '200 400 401 404 500 503',
      'POST /trainer/{trainerId}/creature': '201 400 401 403 409 413 415 500 503',
      'GET /trainer/{trainerId}/creature': '200 400 401 404 500 503',
      'GET /trainer/{trainerId}/creature/{creatureId}': '200 400 401 404 500 503',
      'DELETE /trainer/{trainerId}/creature/{creatureId}': '204 400 401 403 404 500 503',
      'PATCH /trainer/{trainerId}/creature/{creatureId}': '200 400 401 403 404 409 413 415 500 503',
      'POST /trainer/authenticate/refresh': '200 400 401 413 415 429 500 503',
      'POST /trainer/logout': '204 400 401 413 415 500 503',
      'PATCH /trainer/{trainerId}': '200 400 401 403 409 413 415 500 503',
      'POST /trainer/{trainerId}/password': '204 400 401 403 413 415 429 500 503',
      'DELETE /trainer/{trainerId}': '204 400 401 403 413 415 429 500 503',
    });
    const bodies = Object.fromEntries(
      operations.filter(({ op }) => 'requestBody' in op).map(({ key, op }) => [key, op.requestBody?.required]),
    );
    // Logout takes no body as well as one; every other body is required.
    expect(bodies).toEqual({
      'POST /trainer': true,
      'POST /trainer/authenticate': true,
      'POST /trainer/authenticate/refresh': true,
      'POST /trainer/logout': false,
      'POST /trainer/{trainerId}/creature': true,
      'PATCH /trainer/{trainerId}/creature/{creatureId}': true,
      'PATCH /trainer/{trainerId}': true,
      'POST /trainer/{trainerId}/password': true,
      'DELETE /trainer/{trainerId}': true,
    });
    for (const { key, op } of operations) {
      const open = ['POST /trainer', 'POST /trainer/authenticate', 'POST /trainer/authenticate/refresh'].includes(key);
      expect([key, op.security]).toEqual([key, open ? undefined : [{ bearerAuth: [] }]]);
    }
  });

  it('serves Swagger UI at /docs with every asset from this server', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      expect(asset).not.toMatch(/^(https?:)?\/\//);
      const url = new URL(asset, 'http://localhost/docs/').pathname;
      const res = await t.app.inject({ method: 'GET', url });
      expect([url, res.statusCode]).toEqual([url, 200]);
    }
  });
});
