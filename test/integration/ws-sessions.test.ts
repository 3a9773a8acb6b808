import WebSocket from 'ws';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { databases, listen, startTestApp, startTestInstances, TEST_JWT_SECRET, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, signIn, TEST_PASSWORD, type TrainerFixture } from '../helpers/factories';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';
import { EVENTS, until } from '../helpers/events';
import { WS_LIMITS } from '../../src/graphql/subscriptions';
import { MAX_SESSIONS_PER_TRAINER } from '../../src/auth/session.service';

/*
 * What a WebSocket client can do with a session that ended, with subscription ids and with its
 * variables: sent as raw graphql-transport-ws messages, the way a misbehaving client would. The
 * periodic session check is left at its default (10 s), so nothing here is its doing.
 */

interface Message {
  id?: string;
  type: string;
  payload?: { data?: unknown; message?: string; extensions?: { code?: string } }[] & { data?: unknown };
}

interface Socket {
  readonly socket: WebSocket;
  readonly messages: Message[];
  /** Resolves with the close code. */
  readonly closed: Promise<number>;
  send(message: object): void;
  /** The error messages' codes for one subscription id. */
  errorsOf(id: string): (string | undefined)[];
  /** How many `next` messages arrived for one subscription id. */
  nextsOf(id: string): number;
}

/** An acknowledged graphql-transport-ws socket with the token given. */
async function openSocket(origin: string, token: string): Promise<Socket> {
  const socket = new WebSocket(`${origin.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
  const messages: Message[] = [];
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8')) as Message));
  await new Promise((resolve) => socket.once('open', resolve));
  const send = (message: object) => socket.send(JSON.stringify(message));
  send({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } });
  await until(() => messages.some((m) => m.type === 'connection_ack'), 'the ack');
  return {
    socket,
    messages,
    closed,
    send,
    errorsOf: (id) =>
      messages.filter((m) => m.id === id && m.type === 'error').flatMap((m) => (m.payload ?? []).map((e) => e.extensions?.code)),
    nextsOf: (id) => messages.filter((m) => m.id === id && m.type === 'next').length,
  };
}

const subscribe = (id: string, trainerId: number, query = EVENTS, variables: object = { trainerId: String(trainerId) }) => ({
  id,
  type: 'subscribe',
  payload: { query, variables },
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(databases)('WebSocket sessions, ids and variables on %s', (kind) => {
  let t: TestApp;
  let origin: string;
  let me: TrainerFixture;
  const lines: string[] = [];
  const sockets: WebSocket[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, { LOG_LEVEL: 'info' }, { logStream: { write: (line) => lines.push(line) } });
    origin = await listen(t);
    me = await createTrainer(t.app);
  });
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.terminate();
  });
  afterAll(async () => t.close());

  const opened = async (token: string) => {
    const s = await openSocket(origin, token);
    sockets.push(s.socket);
    return s;
  };

  it('closes the sockets of a logged-out session with 4401 within a second, and leaves the trainer’s other sessions open', async () => {
    const session = await signIn(t.app, me.trainer.id);
    const other = await signIn(t.app, me.trainer.id);
    const s = await opened(session.token);
    const o = await opened(other.token);
    s.send(subscribe('a', me.trainer.id));
    await until(() => t.app.services.events.size >= 1, 'the subscription');
    const out = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${session.token}` } });
    expect(out.statusCode).toBe(204);
    const loggedOut = Date.now();
    expect(await s.closed).toBe(4401);
    expect(Date.now() - loggedOut).toBeLessThan(1000);
    await sleep(200);
    expect(o.socket.readyState).toBe(WebSocket.OPEN);
  });

  it(`closes the socket of the oldest session with 4401 once the ${MAX_SESSIONS_PER_TRAINER + 1}st opens, and leaves the newer ones open`, async () => {
    // createTrainer opens the trainer's first session.
    const trainer = await createTrainer(t.app);
    const next = await signIn(t.app, trainer.trainer.id);
    const s = await opened(trainer.token);
    const n = await opened(next.token);
    for (let i = 0; i < MAX_SESSIONS_PER_TRAINER - 2; i += 1) await signIn(t.app, trainer.trainer.id);
    await sleep(100);
    expect(s.socket.readyState).toBe(WebSocket.OPEN);
    const opening = Date.now();
    await signIn(t.app, trainer.trainer.id);
    expect(await s.closed).toBe(4401);
    expect(Date.now() - opening).toBeLessThan(1000);
    await sleep(200);
    expect(n.socket.readyState).toBe(WebSocket.OPEN);
  });

  it('closes every socket of the trainer on logout everywhere, and no other trainer’s', async () => {
    const leaving = await createTrainer(t.app);
    const stranger = await createTrainer(t.app);
    const first = await signIn(t.app, leaving.trainer.id);
    const second = await signIn(t.app, leaving.trainer.id);
    const a = await opened(first.token);
    const b = await opened(second.token);
    const theirs = await opened(stranger.token);
    const out = await t.app.inject({
      method: 'POST',
      url: '/trainer/logout',
      headers: { authorization: `Bearer ${first.token}` },
      payload: { everywhere: true },
    });
    expect(out.statusCode).toBe(204);
    const loggedOut = Date.now();
    expect(await Promise.all([a.closed, b.closed])).toEqual([4401, 4401]);
    expect(Date.now() - loggedOut).toBeLessThan(1000);
    expect(theirs.socket.readyState).toBe(WebSocket.OPEN);
  });

  it('refuses a subscribe on a socket whose session ended unannounced (rows deleted by SQL) by closing it with 4401', async () => {
    const session = await signIn(t.app, me.trainer.id);
    const s = await opened(session.token);
    await t.app.dataSource.query('DELETE FROM trainer_session WHERE id = ?', [session.sessionId]);
    s.send(subscribe('late', me.trainer.id));
    expect(await s.closed).toBe(4401);
    expect(s.nextsOf('late')).toBe(0);
  });

  it('closes a socket with 4401 when its token expires, not at the next periodic check', async () => {
    const session = await signIn(t.app, me.trainer.id);
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const claims = { sub: String(me.trainer.id), sid: String(session.sessionId), iss: 'creature-registry', aud: 'creature-registry' };
    const s = await opened(jwt.sign({ ...claims, exp: expiresAt }, TEST_JWT_SECRET));
    expect(await s.closed).toBe(4401);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt * 1000);
    expect(Date.now()).toBeLessThan(expiresAt * 1000 + 1000);
  });

  it('keeps one live subscription per id: reusing an id while its subscription starts closes the socket (4409), no event comes twice', async () => {
    const s = await opened(me.token);
    const before = t.app.services.events.size;
    for (let i = 0; i < 29; i += 1) {
      s.send(subscribe('X', me.trainer.id));
      s.send({ id: 'X', type: 'complete' });
    }
    s.send(subscribe('X', me.trainer.id));
    expect(await s.closed).toBe(4409);
    await until(() => t.app.services.events.size === before, 'every subscription to end');
  });

  it('takes an id again once its subscription has ended, and complete ends it', async () => {
    const s = await opened(me.token);
    const before = t.app.services.events.size;
    for (let round = 0; round < 3; round += 1) {
      s.send(subscribe('X', me.trainer.id));
      await until(() => t.app.services.events.size === before + 1, `subscription ${round + 1}`);
      s.send({ id: 'X', type: 'complete' });
      await until(() => t.app.services.events.size === before, `subscription ${round + 1} to end`);
    }
    s.send(subscribe('X', me.trainer.id));
    await until(() => t.app.services.events.size === before + 1, 'the last subscription');
    await createCreature(t.app, me.trainer.id);
    const created = await t.app.inject({
      method: 'POST',
      url: `/trainer/${me.trainer.id}/creature`,
      headers: { authorization: `Bearer ${me.token}` },
      payload: { name: `Mew${Date.now()}`, speciesId: 151 },
    });
    expect(created.statusCode).toBe(201);
    await until(() => s.nextsOf('X') >= 1, 'the event');
    await sleep(200);
    expect(s.nextsOf('X')).toBe(1);
    s.send({ id: 'X', type: 'complete' });
    await until(() => t.app.services.events.size === before, 'the subscription to end');
  });

  it(`holds a socket to ${WS_LIMITS.subscriptionsPerConnection} live subscriptions whatever the ids`, async () => {
    const s = await opened(me.token);
    const before = t.app.services.events.size;
    for (let i = 0; i < WS_LIMITS.subscriptionsPerConnection + 5; i += 1) s.send(subscribe(`s${i}`, me.trainer.id));
    await until(() => s.errorsOf(`s${WS_LIMITS.subscriptionsPerConnection + 4}`).length > 0, 'the refusals');
    await sleep(200);
    expect(t.app.services.events.size - before).toBe(WS_LIMITS.subscriptionsPerConnection);
    for (let i = WS_LIMITS.subscriptionsPerConnection; i < WS_LIMITS.subscriptionsPerConnection + 5; i += 1) {
      expect(s.errorsOf(`s${i}`)).toEqual(['BAD_USER_INPUT']);
    }
  });

  it(`counts every subscribe message, refused ones too: the ${WS_LIMITS.subscribesPer10s + 1}st in 10 s is RATE_LIMITED`, async () => {
    const s = await opened(me.token);
    for (let i = 1; i <= WS_LIMITS.subscribesPer10s + 5; i += 1) s.send(subscribe(`q${i}`, me.trainer.id, '{ __typename }', {}));
    await until(() => s.messages.filter((m) => m.type === 'error').length === WS_LIMITS.subscribesPer10s + 5, 'every answer');
    const codes = Array.from({ length: WS_LIMITS.subscribesPer10s + 5 }, (_, i) => s.errorsOf(`q${i + 1}`)[0]);
    expect(codes.slice(0, WS_LIMITS.subscribesPer10s)).toEqual(Array(WS_LIMITS.subscribesPer10s).fill('BAD_USER_INPUT'));
    expect(codes.slice(WS_LIMITS.subscribesPer10s)).toEqual(Array(5).fill('RATE_LIMITED'));
  });

  it.each([
    [
      'an object for an ID!',
      'subscription($t: ID!) { creatureEvents(trainerId: $t) { kind } }',
      { t: { a: 1 } },
      /^Variable "\$t" got invalid value; ID cannot represent value\.$/,
    ],
    [
      'a number past 32 bits for an Int!',
      'subscription($t: ID!, $n: Int!) { creatureEvents(trainerId: $t) { creature { trainer { creatures(limit: $n) { id } } } } }',
      {},
      /^Variable "\$n" got invalid value; Int cannot represent non 32-bit signed integer value\.$/,
    ],
    [
      '30,000 levels of nested arrays',
      'subscription($t: ID!) { creatureEvents(trainerId: $t) { kind } }',
      null,
      /nest arrays or objects deeper/,
    ],
  ])(
    'answers %s in a variable with BAD_USER_INPUT and the reason, as over HTTP, without the value',
    async (_what, query, given, reason) => {
      const s = await opened(me.token);
      const secret = `Secret-Tail-${Date.now()}`;
      let text: string;
      if (given === null) {
        text = `{"id":"v","type":"subscribe","payload":{"query":${JSON.stringify(query)},"variables":{"t":${'['.repeat(30_000)}${']'.repeat(30_000)},"s":"${secret}"}}}`;
      } else if (Object.keys(given).length === 0) {
        text = JSON.stringify(subscribe('v', me.trainer.id, query, { t: String(me.trainer.id), n: 999_999_999_999, s: secret }));
      } else {
        text = JSON.stringify(subscribe('v', me.trainer.id, query, { t: { a: secret } }));
      }
      s.socket.send(text);
      await until(() => s.errorsOf('v').length > 0, 'the refusal');
      expect(s.errorsOf('v')[0]).toBe('BAD_USER_INPUT');
      const refusal = s.messages.find((m) => m.id === 'v' && m.type === 'error');
      expect(refusal?.payload?.[0].message).toMatch(reason);
      // Not in the answer either (the message names the variable, not its value).
      expect(JSON.stringify(s.messages)).not.toContain(secret);
      expect(JSON.stringify(s.messages)).not.toContain('999999999999');
      await sleep(100);
      expect(s.socket.readyState).toBe(WebSocket.OPEN);
      expect(lines.join('\n')).not.toContain(secret);
      expect(lines.join('\n')).not.toContain('999999999999');
      expect(lines.join('\n')).not.toContain('subscription failed');
    },
  );

  it('refuses a subscription document of more than 20 fragments before validating it', async () => {
    const s = await opened(me.token);
    const query = `subscription($t: ID!) { ...F0 } ${Array.from({ length: 21 }, (_, i) => `fragment F${i} on Subscription { creatureEvents(trainerId: $t) { kind } ${i < 20 ? `...F${i + 1}` : ''} }`).join(' ')}`;
    s.send(subscribe('f', me.trainer.id, query));
    await until(() => s.errorsOf('f').length > 0, 'the refusal');
    expect(s.errorsOf('f')).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });
});

describe('session endings across two instances sharing a database and Redis', () => {
  let reachable = false;
  let instances: { apps: FastifyInstance[]; close(): Promise<void> } | undefined;
  let originB = '';

  beforeAll(async () => {
    reachable = await redisReachable('the two-instance session endings test is');
    if (!reachable) return;
    instances = await startTestInstances(databases.includes('mysql') ? 'mysql' : 'sqlite', 2, { REDIS_URL: REDIS_TEST_URL });
    await instances.apps[1].listen({ port: 0, host: '127.0.0.1' });
    originB = `http://127.0.0.1:${(instances.apps[1].server.address() as AddressInfo).port}`;
  });
  afterAll(async () => instances?.close());

  it('closes a socket on instance B within a second of a logout on instance A', async () => {
    if (!reachable) return;
    const [a] = instances!.apps as [FastifyInstance, FastifyInstance];
    const owner = await createTrainer(a);
    const session = await signIn(a, owner.trainer.id);
    const s = await openSocket(originB, session.token);
    const out = await a.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${session.token}` } });
    expect(out.statusCode).toBe(204);
    const loggedOut = Date.now();
    expect(await s.closed).toBe(4401);
    expect(Date.now() - loggedOut).toBeLessThan(1000);
  });

  it(`closes the socket on instance B of the oldest session with 4401 within a second of the ${MAX_SESSIONS_PER_TRAINER + 1}st login on instance A, and leaves the newer ones open`, async () => {
    if (!reachable) return;
    const [a] = instances!.apps as [FastifyInstance, FastifyInstance];
    // createTrainer opens the trainer's first session.
    const owner = await createTrainer(a);
    const next = await signIn(a, owner.trainer.id);
    const oldest = await openSocket(originB, owner.token);
    const newer = await openSocket(originB, next.token);
    try {
      for (let i = 0; i < MAX_SESSIONS_PER_TRAINER - 2; i += 1) await signIn(a, owner.trainer.id);
      await sleep(200);
      expect([oldest.socket.readyState, newer.socket.readyState]).toEqual([WebSocket.OPEN, WebSocket.OPEN]);
      // A login as a client makes it, through the API.
      const login = await a.inject({
        method: 'POST',
        url: '/trainer/authenticate',
        payload: { email: owner.email, password: TEST_PASSWORD },
      });
      expect(login.statusCode).toBe(200);
      const loggedIn = Date.now();
      expect(await oldest.closed).toBe(4401);
      expect(Date.now() - loggedIn).toBeLessThan(1000);
      await sleep(200);
      expect(newer.socket.readyState).toBe(WebSocket.OPEN);
    } finally {
      oldest.socket.terminate();
      newer.socket.terminate();
    }
  });
});
