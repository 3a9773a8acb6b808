import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, signIn, type TrainerFixture } from '../helpers/factories';
import { document, errorCode, gql } from '../helpers/graphql';

interface TrainerView {
  id: string;
  nickname: string;
  email: string | null;
  team: string;
  creaturesOwned: number;
  createdAt: string;
}

const TRAINER = document<{ trainer: TrainerView | null }>(
  `query Trainer($id: ID!) { trainer(id: $id) { id nickname email team creaturesOwned createdAt } }`,
);
const PAGE = document<{
  trainers: { limit: number; offset: number; totalCount: number; items: Pick<TrainerView, 'id' | 'email'>[] };
}>(`query Page($limit: Int!, $offset: Int!) {
  trainers(limit: $limit, offset: $offset) { limit offset totalCount items { id email } }
}`);

describe.each(databases)('reading trainers on %s', (kind) => {
  let t: TestApp;
  let viewer: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    viewer = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  it('returns a trainer by id with its creature count, and its email only to itself', async () => {
    const other = await createTrainer(t.app);
    await createCreature(t.app, other.trainer.id);
    await createCreature(t.app, other.trainer.id);

    const seenByViewer = await gql(t.app, TRAINER, { id: String(other.trainer.id) }, viewer.token);
    expect(seenByViewer.data!.trainer).toMatchObject({
      id: String(other.trainer.id),
      nickname: other.trainer.nickname,
      email: null,
      team: 'MYSTIC',
      creaturesOwned: 2,
    });
    const seenByItself = await gql(t.app, TRAINER, { id: String(other.trainer.id) }, other.token);
    expect(seenByItself.data!.trainer!.email).toBe(other.email);
  });

  it('finds a trainer by nickname in any case with its count, null for none, and only for a caller with a token', async () => {
    const other = await createTrainer(t.app);
    await createCreature(t.app, other.trainer.id);
    const BY_NICKNAME = 'query($n: String!) { trainerByNickname(nickname: $n) { id nickname email creaturesOwned } }';
    const found = await gql<{ trainerByNickname: unknown }>(t.app, BY_NICKNAME, { n: other.trainer.nickname.toUpperCase() }, viewer.token);
    expect(found.data!.trainerByNickname).toEqual({
      id: String(other.trainer.id),
      nickname: other.trainer.nickname,
      email: null,
      creaturesOwned: 1,
    });
    const none = await gql<{ trainerByNickname: unknown }>(t.app, BY_NICKNAME, { n: 'nobody_here' }, viewer.token);
    expect(none.errors).toBeUndefined();
    expect(none.data!.trainerByNickname).toBeNull();
    expect(errorCode(await gql(t.app, BY_NICKNAME, { n: other.trainer.nickname }))).toBe('UNAUTHENTICATED');
    // A nickname outside the nickname rules is no error: it finds nobody (see names.test.ts).
    const tooLong = await gql<{ trainerByNickname: unknown }>(t.app, BY_NICKNAME, { n: 'x'.repeat(33) }, viewer.token);
    expect(tooLong.errors).toBeUndefined();
    expect(tooLong.data!.trainerByNickname).toBeNull();
  });

  it('refuses a page to a caller without a valid token or whose session ended, before anything about its arguments', async () => {
    const { token } = await signIn(t.app, viewer.trainer.id);
    const bad = { limit: 101, offset: 0 };
    expect(errorCode(await gql(t.app, PAGE, bad, token))).toBe('BAD_USER_INPUT');
    for (const anonymous of [undefined, 'not-a-token']) {
      expect(errorCode(await gql(t.app, PAGE, bad, anonymous))).toBe('UNAUTHENTICATED');
      expect(errorCode(await gql(t.app, PAGE, { limit: 2, offset: 0 }, anonymous))).toBe('UNAUTHENTICATED');
    }
    const logout = await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${token}` } });
    expect(logout.statusCode).toBe(204);
    for (const variables of [bad, { limit: 2, offset: 0 }]) {
      const res = await gql(t.app, PAGE, variables, token);
      expect(errorCode(res)).toBe('UNAUTHENTICATED');
      expect(res.data).toBeNull();
    }
  });

  it('answers null for an id that does not exist', async () => {
    const res = await gql(t.app, TRAINER, { id: '2147483647' }, viewer.token);
    expect(res.errors).toBeUndefined();
    expect(res.data!.trainer).toBeNull();
  });

  it.each(['abc', '-1', '0', '1.5', '1e3', '99999999999999999999', "1' OR '1'='1", '', ' 1'])(
    'rejects the malformed id %j as BAD_USER_INPUT',
    async (id) => {
      const res = await gql(t.app, TRAINER, { id }, viewer.token);
      expect(errorCode(res)).toBe('BAD_USER_INPUT');
      expect(res.errors![0].extensions!.fields).toEqual([{ field: 'id', message: expect.any(String) }]);
    },
  );

  it.each([
    ['limit', { limit: 0, offset: 0 }],
    ['limit', { limit: 101, offset: 0 }],
    ['limit', { limit: -1, offset: 0 }],
    ['offset', { limit: 10, offset: -1 }],
  ])('rejects an out-of-range %s (%j) as BAD_USER_INPUT, not clamped', async (field, variables) => {
    const res = await gql(t.app, PAGE, variables, viewer.token);
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions!.fields).toEqual([{ field, message: expect.any(String) }]);
  });

  it.each([
    ['a fractional variable', PAGE, { limit: 1.5, offset: 0 }, 'BAD_USER_INPUT'],
    ['a string variable', PAGE, { limit: '5', offset: 0 }, 'BAD_USER_INPUT'],
    ['an offset beyond 32 bits', PAGE, { limit: 5, offset: 2 ** 40 }, 'BAD_USER_INPUT'],
    // Literals in the document are checked when it is validated.
    ['a fractional literal', '{ trainers(limit: 1.5) { limit } }', {}, 'GRAPHQL_VALIDATION_FAILED'],
    ['a string literal', '{ trainers(offset: "x") { limit } }', {}, 'GRAPHQL_VALIDATION_FAILED'],
    ['an unknown argument', '{ trainers(first: 2) { limit } }', {}, 'GRAPHQL_VALIDATION_FAILED'],
  ])('rejects %s with 400 and its code', async (_name, query, variables, code) => {
    const res = await gql(t.app, query, variables, viewer.token);
    expect(res.status).toBe(400);
    expect(errorCode(res)).toBe(code);
  });

  it.each([
    ['limit', '{ trainers(limit: 1.5) { limit } }'],
    ['offset', '{ trainers(offset: "x") { limit } }'],
    ['first', '{ trainers(first: 2) { limit } }'],
  ])('names the argument %s of a bad literal in extensions.fields', async (field, query) => {
    const res = await gql(t.app, query, {}, viewer.token);
    expect(res.errors![0].extensions!.fields).toEqual([{ field, message: expect.any(String) }]);
  });

  it('limits a trainer’s creatures list the same way', async () => {
    const res = await gql(t.app, '{ me { creatures(limit: 0) { id } } }', {}, viewer.token);
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect(res.errors![0].extensions!.fields).toEqual([{ field: 'limit', message: expect.any(String) }]);
  });

  it('shows the caller its own email through me', async () => {
    const res = await gql<{ me: Pick<TrainerView, 'id' | 'email' | 'creaturesOwned'> }>(
      t.app,
      '{ me { id email creaturesOwned } }',
      {},
      viewer.token,
    );
    expect(res.data!.me).toEqual({ id: String(viewer.trainer.id), email: viewer.email, creaturesOwned: 0 });
  });

  it('asks for a token on every query', async () => {
    for (const query of ['{ me { id } }', '{ trainer(id: "1") { id } }', '{ trainers { limit } }', '{ creature(id: "1") { id } }']) {
      expect(errorCode(await gql(t.app, query))).toBe('UNAUTHENTICATED');
    }
  });
});
