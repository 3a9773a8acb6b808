import jwt from 'jsonwebtoken';
import { Trainer } from '../../src/trainers/trainer.entity';
import { databases, startTestApp, TEST_JWT_SECRET, type TestApp } from '../helpers/app';
import { createTrainer, TEST_PASSWORD } from '../helpers/factories';
import { document, errorCode, gql, type GraphQLBody } from '../helpers/graphql';

type TrainerSelf = { id: string; nickname: string; email: string | null };

const AUTHENTICATE = document<{
  authenticate: { token: string; tokenType: string; expiresAt: string; trainer: TrainerSelf };
}>(`mutation Auth($email: String!, $password: String!) {
  authenticate(email: $email, password: $password) { token tokenType expiresAt trainer { id nickname email } }
}`);
const ME = document<{ me: TrainerSelf }>('{ me { id nickname email } }');

const claims = (sub: number, extra: Record<string, unknown> = {}) => ({
  sub: String(sub),
  iss: 'creature-registry',
  aud: 'creature-registry',
  exp: Math.floor(Date.now() / 1000) + 600,
  ...extra,
});

function unsignedToken(payload: object): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

describe.each(databases)('authentication on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => t.close());

  it('exchanges email and password for a working Bearer token valid for one hour', async () => {
    const { trainer, email } = await createTrainer(t.app);
    const before = Date.now();
    const res = await gql(t.app, AUTHENTICATE, { email: email.toUpperCase(), password: TEST_PASSWORD });
    expect(res.errors).toBeUndefined();
    const auth = res.data!.authenticate;
    expect(auth.tokenType).toBe('Bearer');
    expect(auth.trainer).toEqual({ id: String(trainer.id), nickname: trainer.nickname, email });
    const expiresIn = new Date(auth.expiresAt).getTime() - before;
    expect(expiresIn).toBeGreaterThan(3590_000);
    expect(expiresIn).toBeLessThanOrEqual(3601_000);

    const decoded = jwt.decode(auth.token, { complete: true }) as jwt.Jwt;
    expect(decoded.header.alg).toBe('HS256');
    expect(decoded.payload).toMatchObject({ sub: String(trainer.id), iss: 'creature-registry', aud: 'creature-registry' });

    const me = await gql(t.app, ME, {}, auth.token);
    expect(me.data!.me).toEqual({ id: String(trainer.id), nickname: trainer.nickname, email });
  });

  it('answers an unknown email and a wrong password identically with UNAUTHENTICATED', async () => {
    const { email } = await createTrainer(t.app);
    const wrongPassword = await gql(t.app, AUTHENTICATE, { email, password: 'not-the-password' });
    const unknownEmail = await gql(t.app, AUTHENTICATE, { email: 'nobody@example.test', password: TEST_PASSWORD });
    expect(errorCode(wrongPassword)).toBe('UNAUTHENTICATED');
    expect(unknownEmail.errors).toEqual(wrongPassword.errors);
    expect(unknownEmail.status).toBe(wrongPassword.status);
  });

  it('does not take a password with a trailing NUL for the password (scrypt pads keys with zeros)', async () => {
    const { email } = await createTrainer(t.app);
    const res = await gql(t.app, AUTHENTICATE, { email, password: `${TEST_PASSWORD}\u0000` });
    expect(errorCode(res)).toBe('UNAUTHENTICATED');
  });

  describe('rejects every operation but register and authenticate with UNAUTHENTICATED when the token is', () => {
    let trainerId: number;
    beforeAll(async () => {
      trainerId = (await createTrainer(t.app)).trainer.id;
    });

    const send = (authorization?: string) =>
      t.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        payload: { query: ME },
      });

    const cases: [string, () => string | undefined][] = [
      ['missing', () => undefined],
      ['not a Bearer header', () => `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['malformed', () => 'Bearer not.a-token'],
      ['signed with alg none', () => `Bearer ${unsignedToken(claims(trainerId))}`],
      ['signed with another HS algorithm', () => `Bearer ${jwt.sign(claims(trainerId), TEST_JWT_SECRET, { algorithm: 'HS512' })}`],
      ['expired', () => `Bearer ${jwt.sign(claims(trainerId, { exp: Math.floor(Date.now() / 1000) - 10 }), TEST_JWT_SECRET)}`],
      [
        'without exp',
        () => {
          const { exp: _exp, ...rest } = claims(trainerId);
          return `Bearer ${jwt.sign(rest, TEST_JWT_SECRET)}`;
        },
      ],
      ['of the wrong issuer', () => `Bearer ${jwt.sign(claims(trainerId, { iss: 'someone-else' }), TEST_JWT_SECRET)}`],
      ['for the wrong audience', () => `Bearer ${jwt.sign(claims(trainerId, { aud: 'other-api' }), TEST_JWT_SECRET)}`],
      ['signed with another secret', () => `Bearer ${jwt.sign(claims(trainerId), 'x'.repeat(48))}`],
      ['for a subject that is not a trainer id', () => `Bearer ${jwt.sign(claims(trainerId, { sub: 'admin' }), TEST_JWT_SECRET)}`],
    ];

    it.each(cases)('%s', async (_name, header) => {
      const res = await send(header());
      const body = res.json<GraphQLBody>();
      expect(body.data).toBeNull();
      expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    });

    // trainer(id) and trainers check the caller beside their own read, not before it.
    it.each([
      ['me', ME],
      ['trainer(id)', 'query { trainer(id: "$ID") { id nickname } }'],
      ['trainers', 'query { trainers(limit: 5, offset: 0) { items { id nickname } } }'],
    ])('for a trainer that no longer exists (%s)', async (_name, query) => {
      const { trainer, token } = await createTrainer(t.app);
      await t.app.dataSource.getRepository(Trainer).delete({ id: trainer.id });
      const res = await gql<{ trainer?: unknown; trainers?: unknown }>(t.app, query.replace('$ID', String(trainerId)), {}, token);
      expect(errorCode(res)).toBe('UNAUTHENTICATED');
      // Nothing read beside the check reaches the caller.
      expect(res.data?.trainer ?? null).toBeNull();
      expect(res.data?.trainers ?? null).toBeNull();
    });
  });

  it('still lets a caller with a bad token register', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: 'Bearer garbage' },
      payload: {
        query: `mutation { registerTrainer(input: { nickname: "brock_${Date.now()}", firstName: "Brock", lastName: "Harrison",
          email: "brock${Date.now()}@example.test", password: "onix-onix-onix", team: INSTINCT }) { id } }`,
      },
    });
    expect(res.json<GraphQLBody>().errors).toBeUndefined();
  });
});
