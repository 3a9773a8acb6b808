import type { GraphQLBody, Problem } from '../helpers/graphql';
import type { FastifyInstance } from 'fastify';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';
import { randomInt } from 'node:crypto';
import { databases, startTestApp, startTestInstances, type TestApp } from '../helpers/app';
import { createTrainer, TEST_PASSWORD, type TrainerFixture } from '../helpers/factories';

/*
 * Login throttling (docs/api.md, "Limits"): 5 failures per email and client address in the
 * window, a higher ceiling of failures per email from every address an hour, 30 attempts per
 * client IP a minute, counted the same over GraphQL and REST, and across instances through Redis.
 * Each test logs in from addresses of its own, so that tests do not share IP counters.
 */

const AUTH = `mutation($email: String!, $password: String!) { authenticate(email: $email, password: $password) { token } }`;
const newAddress = () => `127.${randomInt(1, 255)}.${randomInt(0, 255)}.${randomInt(1, 255)}`;

interface Attempt {
  code: string | undefined;
  retryAfter: number | undefined;
  token?: string;
  refreshToken?: string;
}

async function viaGraphQL(app: FastifyInstance, email: string, password: string, ip: string): Promise<Attempt> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    remoteAddress: ip,
    headers: { 'content-type': 'application/json' },
    payload: { query: AUTH, variables: { email, password } },
  });
  const body = res.json<GraphQLBody<{ authenticate?: { token: string } }>>();
  const error = body.errors?.[0];
  return { code: error?.extensions?.code, retryAfter: error?.extensions?.retryAfter, token: body.data?.authenticate?.token };
}

async function viaRest(app: FastifyInstance, email: string, password: string, ip: string): Promise<Attempt> {
  const res = await app.inject({ method: 'POST', url: '/trainer/authenticate', remoteAddress: ip, payload: { email, password } });
  return restAttempt(res);
}

function restAttempt(res: Awaited<ReturnType<FastifyInstance['inject']>>): Attempt {
  if (res.statusCode === 200) {
    const { token, refreshToken } = res.json<{ token: string; refreshToken: string }>();
    return { code: undefined, retryAfter: undefined, token, refreshToken };
  }
  if (res.statusCode === 429) expect(res.headers['retry-after']).toMatch(/^\d+$/);
  return { code: res.json<Problem>().code, retryAfter: res.headers['retry-after'] ? Number(res.headers['retry-after']) : undefined };
}

async function refreshViaGraphQL(app: FastifyInstance, refreshToken: string, ip: string): Promise<Attempt> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    remoteAddress: ip,
    headers: { 'content-type': 'application/json' },
    payload: { query: 'mutation($r: String!) { refreshSession(refreshToken: $r) { token refreshToken } }', variables: { r: refreshToken } },
  });
  const body = res.json<GraphQLBody<{ refreshSession?: { token: string; refreshToken: string } }>>();
  const error = body.errors?.[0];
  return { code: error?.extensions?.code, retryAfter: error?.extensions?.retryAfter, ...body.data?.refreshSession };
}

async function refreshViaRest(app: FastifyInstance, refreshToken: string, ip: string): Promise<Attempt> {
  return restAttempt(
    await app.inject({ method: 'POST', url: '/trainer/authenticate/refresh', remoteAddress: ip, payload: { refreshToken } }),
  );
}

/** LOGIN_IP_PER_MINUTE and LOGIN_ACCOUNT_MAX_FAILURES in these tests (5 failures per email and address, as by default). */
const IP_LIMIT = 12;
const ACCOUNT_LIMIT = 12;

describe.each(databases)('login throttling on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { LOGIN_IP_PER_MINUTE: String(IP_LIMIT), LOGIN_ACCOUNT_MAX_FAILURES: String(ACCOUNT_LIMIT) });
  });
  afterAll(async () => t.close());

  it('refuses an email from an address after 5 failures from it, over GraphQL and REST alike, even with the right password; another address logs in', async () => {
    const { email } = await createTrainer(t.app);
    const ip = newAddress();
    for (let i = 0; i < 3; i += 1) expect((await viaGraphQL(t.app, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');
    for (let i = 0; i < 2; i += 1) expect((await viaRest(t.app, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');

    const graphql = await viaGraphQL(t.app, email, TEST_PASSWORD, ip);
    expect(graphql.code).toBe('RATE_LIMITED');
    expect(graphql.retryAfter).toBeGreaterThan(0);
    expect(graphql.retryAfter).toBeLessThanOrEqual(900);
    const rest = await viaRest(t.app, email, TEST_PASSWORD, ip);
    expect(rest.code).toBe('RATE_LIMITED');
    expect(rest.retryAfter).toBeGreaterThan(0);

    expect((await viaRest(t.app, email, TEST_PASSWORD, newAddress())).token).toEqual(expect.any(String));
    expect((await viaGraphQL(t.app, email, TEST_PASSWORD, newAddress())).token).toEqual(expect.any(String));
  });

  it('lets at most 5 of 10 guesses sent at once from one address be checked, across both transports', async () => {
    const { email } = await createTrainer(t.app);
    const ip = newAddress();
    const guesses = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? viaRest : viaGraphQL)(t.app, email, `wrong-${i}`, ip)));
    expect(guesses.filter((g) => g.code === 'UNAUTHENTICATED')).toHaveLength(5);
    expect(guesses.filter((g) => g.code === 'RATE_LIMITED')).toHaveLength(5);
    expect((await viaRest(t.app, email, TEST_PASSWORD, ip)).code).toBe('RATE_LIMITED');
    expect((await viaRest(t.app, email, TEST_PASSWORD, newAddress())).token).toEqual(expect.any(String));
  });

  it('counts an email’s failures from every address together: past LOGIN_ACCOUNT_MAX_FAILURES even a fresh address is refused', async () => {
    const { email } = await createTrainer(t.app);
    for (let a = 0; a < ACCOUNT_LIMIT / 3; a += 1) {
      const ip = newAddress();
      for (let i = 0; i < 3; i += 1) expect((await (i % 2 ? viaRest : viaGraphQL)(t.app, email, 'wrong', ip)).code).toBe('UNAUTHENTICATED');
    }
    const graphql = await viaGraphQL(t.app, email, TEST_PASSWORD, newAddress());
    expect(graphql.code).toBe('RATE_LIMITED');
    // The account's window is an hour.
    expect(graphql.retryAfter).toBeGreaterThan(900);
    expect(graphql.retryAfter).toBeLessThanOrEqual(3600);
    const rest = await viaRest(t.app, email, TEST_PASSWORD, newAddress());
    expect([rest.code, rest.retryAfter! > 900]).toEqual(['RATE_LIMITED', true]);
  });

  it('lets at most LOGIN_ACCOUNT_MAX_FAILURES of 20 guesses sent at once from as many addresses be checked', async () => {
    const { email } = await createTrainer(t.app);
    const guesses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? viaRest : viaGraphQL)(t.app, email, `wrong-${i}`, newAddress())),
    );
    expect(guesses.filter((g) => g.code === 'UNAUTHENTICATED')).toHaveLength(ACCOUNT_LIMIT);
    expect(guesses.filter((g) => g.code === 'RATE_LIMITED')).toHaveLength(20 - ACCOUNT_LIMIT);
    expect((await viaRest(t.app, email, TEST_PASSWORD, newAddress())).code).toBe('RATE_LIMITED');
  });

  it('leaves other emails alone', async () => {
    const victim = await createTrainer(t.app);
    const bystander = await createTrainer(t.app);
    const ip = newAddress();
    for (let i = 0; i < 5; i += 1) await viaGraphQL(t.app, victim.email, 'wrong-password', ip);
    expect((await viaGraphQL(t.app, bystander.email, TEST_PASSWORD, ip)).token).toEqual(expect.any(String));
  });

  it('forgets an address’s failures after a successful login from it, but not the account’s', async () => {
    const { email } = await createTrainer(t.app);
    const ip = newAddress();
    for (let i = 0; i < 4; i += 1) expect((await viaRest(t.app, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');
    expect((await viaRest(t.app, email, TEST_PASSWORD, ip)).token).toEqual(expect.any(String));
    for (let i = 0; i < 4; i += 1) expect((await viaRest(t.app, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');
    expect((await viaGraphQL(t.app, email, TEST_PASSWORD, ip)).token).toEqual(expect.any(String));
    // 8 failures so far; the logins took no point of the account's ceiling. 4 more reach it.
    const elsewhere = newAddress();
    for (let i = 0; i < 4; i += 1) expect((await viaRest(t.app, email, 'wrong-password', elsewhere)).code).toBe('UNAUTHENTICATED');
    expect((await viaGraphQL(t.app, email, TEST_PASSWORD, newAddress())).code).toBe('RATE_LIMITED');
  });

  it('limits attempts per client address (LOGIN_IP_PER_MINUTE), whatever the email or transport', async () => {
    const trainers: TrainerFixture[] = [];
    for (let i = 0; i <= IP_LIMIT; i += 1) trainers.push(await createTrainer(t.app));
    const ip = newAddress();
    for (let i = 0; i < IP_LIMIT; i += 1) {
      const attempt = i % 2 === 0 ? viaGraphQL : viaRest;
      expect((await attempt(t.app, trainers[i].email, TEST_PASSWORD, ip)).token).toEqual(expect.any(String));
    }
    const refused = await viaRest(t.app, trainers[IP_LIMIT].email, TEST_PASSWORD, ip);
    expect(refused.code).toBe('RATE_LIMITED');
    expect(refused.retryAfter).toBeLessThanOrEqual(60);
    expect((await viaGraphQL(t.app, trainers[IP_LIMIT].email, TEST_PASSWORD, newAddress())).token).toEqual(expect.any(String));
  });

  it('counts refreshes against the same per-address limit as logins, over both transports', async () => {
    const ip = newAddress();
    const { email } = await createTrainer(t.app);
    const login = await viaRest(t.app, email, TEST_PASSWORD, ip);
    let refreshToken = login.refreshToken!;
    for (let i = 1; i < IP_LIMIT; i += 1) {
      const next = await (i % 2 === 0 ? refreshViaRest : refreshViaGraphQL)(t.app, refreshToken, ip);
      expect(next.refreshToken).toEqual(expect.any(String));
      refreshToken = next.refreshToken!;
    }
    const refused = await refreshViaRest(t.app, refreshToken, ip);
    expect(refused.code).toBe('RATE_LIMITED');
    expect((await refreshViaGraphQL(t.app, refreshToken, ip)).code).toBe('RATE_LIMITED');
    expect((await viaGraphQL(t.app, email, TEST_PASSWORD, ip)).code).toBe('RATE_LIMITED');
    // Refused before it was looked at: the token still works from elsewhere.
    expect((await refreshViaGraphQL(t.app, refreshToken, newAddress())).token).toEqual(expect.any(String));
  });
});

/** LOGIN_ACCOUNT_MAX_FAILURES of the two instances. */
const SHARED_ACCOUNT_LIMIT = 8;

describe('two instances on one MySQL and one Redis', () => {
  let reachable = false;
  let instances: { apps: FastifyInstance[]; close(): Promise<void> } | undefined;

  beforeAll(async () => {
    reachable = await redisReachable('the two-instance test is');
    if (!reachable) return;
    const kind = databases.includes('mysql') ? 'mysql' : 'sqlite';
    instances = await startTestInstances(kind, 2, {
      REDIS_URL: REDIS_TEST_URL,
      REFRESH_REUSE_GRACE: '1s',
      LOGIN_ACCOUNT_MAX_FAILURES: String(SHARED_ACCOUNT_LIMIT),
    });
  });
  afterAll(async () => instances?.close());

  it('accepts a token from one instance on the other, and counts failures from an address on both together', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const { email } = await createTrainer(a);

    const token = (await viaRest(a, email, TEST_PASSWORD, newAddress())).token!;
    const me = await b.inject({
      method: 'POST',
      url: '/graphql',
      payload: { query: '{ me { email } }' },
      headers: { authorization: `Bearer ${token}` },
    });
    expect(me.json<GraphQLBody<{ me: { email: string } }>>().data!.me.email).toBe(email);

    const ip = newAddress();
    for (let i = 0; i < 3; i += 1) expect((await viaGraphQL(a, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');
    for (let i = 0; i < 2; i += 1) expect((await viaRest(b, email, 'wrong-password', ip)).code).toBe('UNAUTHENTICATED');
    expect((await viaGraphQL(a, email, TEST_PASSWORD, ip)).code).toBe('RATE_LIMITED');
    expect((await viaRest(b, email, TEST_PASSWORD, ip)).code).toBe('RATE_LIMITED');
    expect((await viaRest(b, email, TEST_PASSWORD, newAddress())).token).toEqual(expect.any(String));
  });

  it('counts guesses sent at once from one address to both instances together: 5 checked, the rest refused', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const { email } = await createTrainer(a);
    const ip = newAddress();
    const guesses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? viaRest(a, email, `w${i}`, ip) : viaGraphQL(b, email, `w${i}`, ip))),
    );
    expect(guesses.filter((g) => g.code === 'UNAUTHENTICATED')).toHaveLength(5);
    expect(guesses.filter((g) => g.code === 'RATE_LIMITED')).toHaveLength(5);
  });

  it('shares the account ceiling: of guesses sent at once from many addresses to both instances, LOGIN_ACCOUNT_MAX_FAILURES are checked', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const { email } = await createTrainer(a);
    const guesses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 ? viaRest(a, email, `w${i}`, newAddress()) : viaGraphQL(b, email, `w${i}`, newAddress()),
      ),
    );
    expect(guesses.filter((g) => g.code === 'UNAUTHENTICATED')).toHaveLength(SHARED_ACCOUNT_LIMIT);
    expect(guesses.filter((g) => g.code === 'RATE_LIMITED')).toHaveLength(12 - SHARED_ACCOUNT_LIMIT);
    expect((await viaRest(a, email, TEST_PASSWORD, newAddress())).code).toBe('RATE_LIMITED');
    expect((await viaGraphQL(b, email, TEST_PASSWORD, newAddress())).code).toBe('RATE_LIMITED');
  });

  it('ends a session logged out on one instance on the other at once, and spots a replay made through the other after the reuse grace', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const { email, trainer } = await createTrainer(a);
    const read = (app: FastifyInstance, token: string) =>
      app.inject({ method: 'GET', url: `/trainer/${trainer.id}`, headers: { authorization: `Bearer ${token}` } });
    const ending = await viaRest(a, email, TEST_PASSWORD, newAddress());
    expect((await read(b, ending.token!)).statusCode).toBe(200);
    const logout = await a.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${ending.token}` } });
    expect(logout.statusCode).toBe(204);
    expect((await read(b, ending.token!)).statusCode).toBe(401);

    const stolen = await viaRest(a, email, TEST_PASSWORD, newAddress());
    const users = await refreshViaRest(a, stolen.refreshToken!, newAddress());
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect((await refreshViaGraphQL(b, stolen.refreshToken!, newAddress())).code).toBe('UNAUTHENTICATED');
    expect((await refreshViaRest(a, users.refreshToken!, newAddress())).code).toBe('UNAUTHENTICATED');
    expect((await read(a, users.token!)).statusCode).toBe(401);
  });

  it('answers concurrent refreshes with one token through both instances alike, with one next refresh token that works', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const { email, trainer } = await createTrainer(a);
    const login = await viaRest(a, email, TEST_PASSWORD, newAddress());
    const results = await Promise.all(
      [a, b, a, b].map((app, i) => (i < 2 ? refreshViaRest : refreshViaGraphQL)(app, login.refreshToken!, newAddress())),
    );
    expect(results.map((r) => r.code)).toEqual([undefined, undefined, undefined, undefined]);
    expect(new Set(results.map((r) => r.refreshToken)).size).toBe(1);
    const next = await refreshViaRest(b, results[0].refreshToken!, newAddress());
    const read = await a.inject({ method: 'GET', url: `/trainer/${trainer.id}`, headers: { authorization: `Bearer ${next.token}` } });
    expect(read.statusCode).toBe(200);
  });

  it('shares the per-address limit across instances', async () => {
    if (!reachable) return;
    const [a, b] = instances!.apps as [FastifyInstance, FastifyInstance];
    const ip = newAddress();
    for (let i = 0; i < 30; i += 1)
      await (i % 2 === 0 ? viaGraphQL(a, 'nobody@example.test', 'x', ip) : viaRest(b, 'nobody@example.test', 'x', ip));
    expect((await viaRest(a, 'someone@example.test', 'x', ip)).code).toBe('RATE_LIMITED');
  });
});
