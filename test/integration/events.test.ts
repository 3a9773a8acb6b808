import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import { connect, type AddressInfo } from 'node:net';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';
import jwt from 'jsonwebtoken';
import { databases, listen, startTestApp, startTestInstances, TEST_JWT_SECRET, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, signIn, type TrainerFixture } from '../helpers/factories';
import { WS_LIMITS } from '../../src/graphql/subscriptions';
import { RedisServer } from '../helpers/redis-server';
import { EVENTS, until, watch, type Watch } from '../helpers/events';
import { gql } from '../helpers/graphql';

/*
 * Creature events over GraphQL over WebSocket (graphql-ws), driven by graphql-ws's own client
 * against a listening server: what is delivered, in what order, and who is refused.
 */

describe.each(databases)('creature events on %s', (kind) => {
  let t: TestApp;
  let origin: string;
  let me: TrainerFixture;
  const open: Client[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, {}, { sessionCheckMs: 200 });
    origin = await listen(t);
    me = await createTrainer(t.app);
  });
  afterEach(async () => {
    for (const client of open.splice(0)) await client.dispose();
  });
  afterAll(async () => t.close());

  const started = async (w: Watch) => {
    open.push(w.client);
    await w.connected;
    // The subscription is registered once the server has answered the subscribe message; a
    // round trip on the same socket orders after it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    return w;
  };

  it('delivers creates, updates and deletes made over GraphQL and REST, in order, to a subscriber of another trainer', async () => {
    const watcher = await createTrainer(t.app);
    const w = await started(watch(origin, watcher.token, String(me.trainer.id)));
    const created = await gql(
      t.app,
      'mutation($t: ID!) { createCreature(trainerId: $t, input: { name: "Eevee", speciesId: 133 }) { id } }',
      { t: String(me.trainer.id) },
      me.token,
    );
    const id = (created.data as { createCreature: { id: string } }).createCreature.id;
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/trainer/${me.trainer.id}/creature/${id}`,
      headers: { authorization: `Bearer ${me.token}` },
      payload: { level: 30, name: 'Vaporeon' },
    });
    expect(patched.statusCode).toBe(200);
    const rest = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: { authorization: `Bearer ${me.token}` },
      payload: { name: 'Jolteon', speciesId: 135 },
    });
    expect(rest.statusCode).toBe(201);
    const deleted = await gql(t.app, 'mutation($id: ID!) { deleteCreature(id: $id) { id } }', { id }, me.token);
    expect(deleted.errors).toBeUndefined();
    await until(() => w.events.length >= 4, 'four events');
    expect(w.events.map((e) => [e.kind, e.creature.name, e.creature.level])).toEqual([
      ['CREATED', 'Eevee', 1],
      ['UPDATED', 'Vaporeon', 30],
      ['CREATED', 'Jolteon', 1],
      ['DELETED', 'Vaporeon', 30],
    ]);
    expect(w.events.every((e) => e.creature.trainer.id === String(me.trainer.id))).toBe(true);
    expect(new Date(w.events[0].at).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(w.errors).toEqual([]);
  });

  it('answers each event afresh: the trainer’s count in the second event includes the second creature', async () => {
    const owner = await createTrainer(t.app);
    const w = await started(
      watch(
        origin,
        owner.token,
        String(owner.trainer.id),
        'subscription($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind at creature { id name level trainer { id creaturesOwned } } } }',
      ),
    );
    for (const name of ['One', 'Two']) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/trainer/${owner.trainer.id}/creature`,
        headers: { authorization: `Bearer ${owner.token}` },
        payload: { name, speciesId: 1 },
      });
      expect(res.statusCode).toBe(201);
      await until(() => w.events.length === (name === 'One' ? 1 : 2), `the event of ${name}`);
    }
    expect(w.events.map((e) => (e.creature.trainer as { creaturesOwned?: number }).creaturesOwned)).toEqual([1, 2]);
  });

  it('shows the trainer as it is now, also to its own subscriber after it renamed itself and changed team', async () => {
    const owner = await createTrainer(t.app);
    const watcher = await createTrainer(t.app);
    const query =
      'subscription($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind creature { name trainer { id nickname team } } } }';
    const own = await started(watch(origin, owner.token, String(owner.trainer.id), query));
    const other = await started(watch(origin, watcher.token, String(owner.trainer.id), query));
    const nickname = `${owner.trainer.nickname}_2`;
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/trainer/${owner.trainer.id}`,
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ nickname, team: 'INSTINCT' }),
    });
    expect(patched.statusCode).toBe(200);
    const res = await t.app.inject({
      method: 'POST',
      url: `/trainer/${owner.trainer.id}/creature`,
      headers: { authorization: `Bearer ${owner.token}` },
      payload: { name: 'AfterRename', speciesId: 1 },
    });
    expect(res.statusCode).toBe(201);
    await until(() => own.events.length >= 1 && other.events.length >= 1, 'the event on both sockets');
    const now = { id: String(owner.trainer.id), nickname, team: 'INSTINCT' };
    for (const w of [own, other]) {
      expect(w.events.map((e) => [e.kind, e.creature.name, e.creature.trainer])).toEqual([['CREATED', 'AfterRename', now]]);
    }
  });

  it('sends nothing of other trainers, and nothing of refused writes', async () => {
    const other = await createTrainer(t.app);
    const w = await started(watch(origin, me.token, String(other.trainer.id)));
    await createCreature(t.app, me.trainer.id);
    const mine = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: { authorization: `Bearer ${me.token}` },
      payload: { name: 'Only mine', speciesId: 1 },
    });
    expect(mine.statusCode).toBe(201);
    const forbidden = await t.app.inject({
      method: 'POST',
      url: `/trainer/${other.trainer.id}/creature`,
      headers: { authorization: `Bearer ${me.token}` },
      payload: { name: 'Not yours', speciesId: 1 },
    });
    expect(forbidden.statusCode).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(w.events).toEqual([]);
  });

  it.each([
    ['no token', undefined],
    ['a malformed token', 'not-a-token'],
  ])('closes a socket with %s with 4401', async (_what, token) => {
    const w = watch(origin, token, String(me.trainer.id));
    open.push(w.client);
    expect(await w.closed).toBe(4401);
  });

  it('closes a socket with 4401 once its session is logged out', async () => {
    const session = await signIn(t.app, me.trainer.id);
    const w = await started(watch(origin, session.token, String(me.trainer.id)));
    const out = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${session.token}` } });
    expect(out.statusCode).toBe(204);
    expect(await w.closed).toBe(4401);
  });

  it('closes a socket with 4401 once its token expires', async () => {
    const session = await signIn(t.app, me.trainer.id);
    const claims = { sub: String(me.trainer.id), sid: String(session.sessionId), iss: 'creature-registry', aud: 'creature-registry' };
    const shortLived = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) + 2 }, TEST_JWT_SECRET);
    const w = await started(watch(origin, shortLived, String(me.trainer.id)));
    const opened = Date.now();
    expect(await w.closed).toBe(4401);
    expect(Date.now() - opened).toBeGreaterThan(500);
  });

  it('answers NOT_FOUND to a subscription to a trainer that does not exist, and BAD_USER_INPUT to a malformed id', async () => {
    const missing = await started(watch(origin, me.token, '2147483647'));
    await until(() => missing.errors.length > 0, 'an error');
    expect(missing.errors[0].extensions?.code).toBe('NOT_FOUND');
    const malformed = await started(watch(origin, me.token, 'abc'));
    await until(() => malformed.errors.length > 0, 'an error');
    expect(malformed.errors[0].extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('refuses a wrong-typed variable with the same message as HTTP, graphql-js’s reason included', async () => {
    const id = String(me.trainer.id);
    const pairs = [
      [
        'subscription($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind } }',
        'query($trainerId: ID!) { trainer(id: $trainerId) { id } }',
      ],
      [
        'subscription($trainerId: ID!, $n: Int!) { creatureEvents(trainerId: $trainerId) { creature { trainer { creatures(limit: $n) { id } } } } }',
        'query($trainerId: ID!, $n: Int!) { trainer(id: $trainerId) { creatures(limit: $n) { id } } }',
      ],
    ] as const;
    const cases = [
      [pairs[0], { trainerId: true }],
      [pairs[0], { trainerId: 1.5 }],
      [pairs[0], { trainerId: { id: 'x' } }],
      [pairs[0], { trainerId: ['1'] }],
      [pairs[0], {}],
      [pairs[1], { trainerId: id, n: 'ten' }],
      [pairs[1], { trainerId: id, n: 2 ** 40 }],
      [pairs[1], { trainerId: id, n: null }],
    ] as const;
    for (const [[subscription, query], variables] of cases) {
      const overHttp = await gql(t.app, query, variables, me.token);
      expect(overHttp.status).toBe(400);
      const client = createClient({
        url: `${origin.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${me.token}` },
        retryAttempts: 0,
      });
      open.push(client);
      const overWs = await new Promise<unknown>((resolve) => {
        client.subscribe(
          { query: subscription, variables },
          { next: () => undefined, error: (error) => resolve(error), complete: () => resolve('completed') },
        );
      });
      // The documents differ (a subscription, a query): their locations too.
      const unlocated = (errors: unknown) => (errors as { locations?: unknown }[]).map(({ locations: _at, ...rest }) => rest);
      expect([variables, unlocated(overWs)]).toEqual([variables, unlocated(overHttp.errors)]);
      // The reason is there: what the type takes, not only that the value was refused.
      expect(overHttp.errors![0].message).toMatch(
        /^Variable "\$(trainerId|n)" (got invalid value; \w+ cannot represent|of (required|non-null) type)/,
      );
    }
  });

  it('takes only subscriptions over WebSocket, within the depth limit', async () => {
    const query = await started(
      watch(origin, me.token, String(me.trainer.id), 'query($trainerId: ID!) { trainer(id: $trainerId) { id } }'),
    );
    await until(() => query.errors.length > 0, 'an error');
    expect(query.errors[0].extensions?.code).toBe('BAD_USER_INPUT');
    const deep = await started(
      watch(
        origin,
        me.token,
        String(me.trainer.id),
        'subscription($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { creature { trainer { creatures { trainer { creatures { trainer { creatures { trainer { id } } } } } } } } } }',
      ),
    );
    await until(() => deep.errors.length > 0, 'an error');
    expect(deep.errors[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });
});

/** Opens a raw WebSocket at /graphql; resolves with the HTTP status of a refused upgrade, or the open socket. */
function rawSocket(origin: string, headers: Record<string, string> = {}): Promise<{ status: number; socket?: WebSocket }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', { headers });
    socket.once('open', () => resolve({ status: 101, socket }));
    socket.once('unexpected-response', (_request, response) => resolve({ status: response.statusCode ?? 0 }));
    socket.once('error', () => resolve({ status: 0 }));
  });
}

describe.each(databases)('WebSocket limits on %s', (kind) => {
  let t: TestApp;
  let origin: string;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind, { CORS_ORIGINS: 'https://app.example.com' });
    origin = await listen(t);
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  it(`refuses a subscription past ${WS_LIMITS.subscriptionsPerConnection} on one connection`, async () => {
    const client = createClient({
      url: `${origin.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${me.token}` },
      retryAttempts: 0,
      onNonLazyError: () => undefined,
    });
    const codes: (string | undefined)[] = [];
    for (let i = 0; i <= WS_LIMITS.subscriptionsPerConnection; i += 1) {
      client.subscribe(
        { query: EVENTS, variables: { trainerId: String(me.trainer.id) } },
        {
          next: () => undefined,
          error: (error) => codes.push(...(error as { extensions?: { code?: string } }[]).map((e) => e.extensions?.code)),
          complete: () => undefined,
        },
      );
    }
    await until(() => codes.length > 0, 'the refusal');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(codes).toEqual(['BAD_USER_INPUT']);
    await client.dispose();
  });

  it('counts only open subscriptions: 25 subscribe-and-complete rounds on one connection leave room for more', async () => {
    // The test before it leaves its subscriptions ending as its socket closes.
    await until(() => t.app.services.events.size === 0, 'the earlier subscriptions to end');
    const initial = 0;
    const client = createClient({
      url: `${origin.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${me.token}` },
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => undefined,
    });
    const codes: (string | undefined)[] = [];
    const sink = {
      next: () => undefined,
      error: (error: unknown) => codes.push(...(error as { extensions?: { code?: string } }[]).map((e) => e.extensions?.code)),
      complete: () => undefined,
    };
    for (let i = 0; i < 25; i += 1) {
      const stop = client.subscribe({ query: EVENTS, variables: { trainerId: String(me.trainer.id) } }, sink);
      await until(() => t.app.services.events.size === initial + 1, `subscription ${i + 1}`);
      stop();
      await until(() => t.app.services.events.size === initial, `subscription ${i + 1} to end`);
    }
    client.subscribe({ query: EVENTS, variables: { trainerId: String(me.trainer.id) } }, sink);
    await until(() => t.app.services.events.size === initial + 1, 'one more subscription');
    expect(codes).toEqual([]);
    await client.dispose();
  });

  it(`answers RATE_LIMITED, with retryAfter, to subscribe messages past ${WS_LIMITS.subscribesPer10s} in 10 s on one connection`, async () => {
    const { socket } = await rawSocket(origin);
    const messages: { id?: string; type: string; payload?: { extensions?: { code?: string; retryAfter?: number } }[] }[] = [];
    socket!.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8')) as (typeof messages)[number]));
    socket!.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${me.token}` } }));
    await until(() => messages.some((m) => m.type === 'connection_ack'), 'the ack');
    // Subscribing and ending, over and over: each start costs the server reads.
    const before = t.app.services.events.size;
    const payload = { query: EVENTS, variables: { trainerId: String(me.trainer.id) } };
    for (let i = 1; i <= WS_LIMITS.subscribesPer10s; i += 1) {
      socket!.send(JSON.stringify({ id: String(i), type: 'subscribe', payload }));
      await until(() => t.app.services.events.size === before + 1, `subscription ${i}`);
      socket!.send(JSON.stringify({ id: String(i), type: 'complete' }));
      await until(() => t.app.services.events.size === before, `subscription ${i} to end`);
    }
    socket!.send(JSON.stringify({ id: 'one more', type: 'subscribe', payload }));
    await until(() => messages.some((m) => m.type === 'error'), 'the refusal');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const errors = messages.filter((m) => m.type === 'error');
    expect(errors.map((m) => [m.id, m.payload?.[0]?.extensions?.code])).toEqual([['one more', 'RATE_LIMITED']]);
    const retryAfter = errors[0].payload![0].extensions!.retryAfter!;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    socket!.terminate();
  });

  it(`refuses a connection past ${WS_LIMITS.connectionsPerAddress} from one address with 429, and takes one again once another closes`, async () => {
    const sockets: WebSocket[] = [];
    for (let i = 0; i < WS_LIMITS.connectionsPerAddress; i += 1) {
      const opened = await rawSocket(origin);
      expect(opened.status).toBe(101);
      sockets.push(opened.socket!);
    }
    expect((await rawSocket(origin)).status).toBe(429);
    await new Promise((resolve) => {
      sockets[0].once('close', resolve);
      sockets[0].close();
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await rawSocket(origin);
    expect(again.status).toBe(101);
    for (const socket of [...sockets.slice(1), again.socket!]) socket.terminate();
  });

  it('refuses an Origin outside CORS_ORIGINS, and takes the listed one and none', async () => {
    expect((await rawSocket(origin, { origin: 'https://evil.example' })).status).toBe(403);
    for (const headers of [{ origin: 'https://app.example.com' }, {}] as Record<string, string>[]) {
      const opened = await rawSocket(origin, headers);
      expect(opened.status).toBe(101);
      opened.socket!.terminate();
    }
  });

  it('closes a connection that sends a message over 64 KiB (1009)', async () => {
    const { socket } = await rawSocket(origin);
    const code = new Promise<number>((resolve) => socket!.once('close', (c) => resolve(c)));
    socket!.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${'x'.repeat(70 * 1024)}` } }));
    expect(await code).toBe(1009);
  });

  it('survives a client that resets its connection right after an upgrade request it is refused', async () => {
    for (const path of ['/nowhere', '/graphql']) {
      await new Promise<void>((resolve) => {
        const socket = connect(Number(new URL(origin).port), '127.0.0.1', () => {
          socket.write(
            `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: https://evil.example\r\n\r\n`,
          );
          socket.resetAndDestroy();
          resolve();
        });
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
  });

  it('answers an upgrade to anything but WebSocket with 400', async () => {
    const res = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(origin).port), '127.0.0.1', () => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
      });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('close', () => resolve(data));
    });
    expect(res).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('answers another path than /graphql with 404', async () => {
    const other = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${origin.replace('http', 'ws')}/trainer`, 'graphql-transport-ws');
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('error', () => resolve(0));
    });
    expect(other).toBe(404);
  });

  it('closes open sockets with 1001 when the app closes (SIGTERM)', async () => {
    const closing = await startTestApp(kind);
    const closingOrigin = await listen(closing);
    const who = await createTrainer(closing.app);
    const w = watch(closingOrigin, who.token, String(who.trainer.id));
    await w.connected;
    await closing.close();
    expect(await w.closed).toBe(1001);
  });
});

describe('creature events across two instances sharing MySQL and Redis', () => {
  let reachable = false;
  let instances: { apps: FastifyInstance[]; close(): Promise<void> } | undefined;
  let originB = '';

  beforeAll(async () => {
    reachable = await redisReachable('the two-instance events test is');
    if (!reachable) return;
    instances = await startTestInstances(databases.includes('mysql') ? 'mysql' : 'sqlite', 2, { REDIS_URL: REDIS_TEST_URL });
    await instances.apps[1].listen({ port: 0, host: '127.0.0.1' });
    originB = `http://127.0.0.1:${(instances.apps[1].server.address() as AddressInfo).port}`;
  });
  afterAll(async () => instances?.close());

  it('delivers writes made through instance A, over GraphQL and REST, to a subscriber on instance B, in order', async () => {
    if (!reachable) return;
    const [a] = instances!.apps as [FastifyInstance, FastifyInstance];
    const owner = await createTrainer(a);
    const w = watch(originB, owner.token, String(owner.trainer.id));
    await w.connected;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const created = await a.inject({
      method: 'POST',
      url: `/trainer/${owner.trainer.id}/creature`,
      headers: { authorization: `Bearer ${owner.token}` },
      payload: { name: 'Pichu', speciesId: 172 },
    });
    const id = created.json<{ id: number }>().id;
    const renamed = await gql(
      a,
      'mutation($id: ID!) { updateCreature(id: $id, input: { name: "Pikachu", level: 20 }) { id } }',
      { id: String(id) },
      owner.token,
    );
    expect(renamed.errors).toBeUndefined();
    const gone = await a.inject({
      method: 'DELETE',
      url: `/trainer/${owner.trainer.id}/creature/${id}`,
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(gone.statusCode).toBe(204);
    await until(() => w.events.length >= 3, 'three events');
    expect(w.events.map((e) => [e.kind, e.creature.name])).toEqual([
      ['CREATED', 'Pichu'],
      ['UPDATED', 'Pikachu'],
      ['DELETED', 'Pikachu'],
    ]);
    await w.client.dispose();
  });
});

describe.each(databases)('creature events while Redis is killed and restarted (a private redis-server), on %s', (kind) => {
  let redis: RedisServer | undefined;
  let instances: { apps: FastifyInstance[]; close(): Promise<void> } | undefined;
  const origins: string[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start('the Redis restart events test is');
    if (!redis) return;
    instances = await startTestInstances(kind, 2, { REDIS_URL: redis.url, LOG_LEVEL: 'silent' });
    for (const app of instances.apps) {
      await app.listen({ port: 0, host: '127.0.0.1' });
      origins.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`);
    }
  });
  afterAll(async () => {
    await instances?.close();
    await redis?.kill();
  });

  it('keeps serving and delivering its own events while Redis is down, and shares events both ways once it is back', async () => {
    if (!redis) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const owner = await createTrainer(a);
    const onA = watch(origins[0], owner.token, String(owner.trainer.id));
    const onB = watch(origins[1], owner.token, String(owner.trainer.id));
    await Promise.all([onA.connected, onB.connected]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    let n = 0;
    const create = async (app: FastifyInstance) => {
      n += 1;
      const res = await app.inject({
        method: 'POST',
        url: `/trainer/${owner.trainer.id}/creature`,
        headers: { authorization: `Bearer ${owner.token}` },
        payload: { name: `Outage ${n}`, speciesId: 1 },
      });
      expect(res.statusCode).toBe(201);
      return `Outage ${n}`;
    };
    await create(a);
    await until(() => onA.events.length === 1 && onB.events.length === 1, 'the first event on both instances');

    await redis.kill();
    // The instance keeps answering, and its own subscribers keep hearing its writes.
    const read = await a.inject({
      method: 'GET',
      url: `/trainer/${owner.trainer.id}`,
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(read.statusCode).toBe(200);
    await create(a);
    await until(() => onA.events.length === 2, 'the event on instance A while Redis is down');
    // B cannot hear A through Redis now: it finds the event in the kept ones at its next check.
    await until(() => onB.events.length === 2, 'the event on instance B from the kept events while Redis is down', 5000);
    // A subscription started while Redis is down begins (after at most 1 s) with this instance's events.
    const late = watch(origins[0], owner.token, String(owner.trainer.id));
    await late.connected;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const lateName = await create(a);
    await until(() => late.events.some((e) => e.creature.name === lateName), 'the event on the subscription made while Redis was down');

    await redis.restart();
    // ioredis reconnects and follows its channels again by itself: write until B hears again.
    const deadline = Date.now() + 20_000;
    let fromA = '';
    while (!onB.events.some((e) => e.creature.name === fromA)) {
      if (Date.now() > deadline) throw new Error('instance B heard nothing from A after Redis came back');
      fromA = await create(a);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    // And the other way: a write through B reaches A's subscribers.
    const fromB = await create(b);
    await until(() => onA.events.some((e) => e.creature.name === fromB), 'the event from B on instance A', 5000);
    // What each subscriber got is in commit order, each event once and none missing (the kept events filled every gap).
    for (const w of [onA, onB, late]) {
      const numbers = w.events.map((e) => e.sequence);
      expect(numbers).toEqual(numbers.map((_, i) => numbers[0] + i));
    }
    await Promise.all([onA.client.dispose(), onB.client.dispose(), late.client.dispose()]);
  });
});
