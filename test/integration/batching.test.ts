import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { document, gql } from '../helpers/graphql';

type PageItem = { id: string; creaturesOwned: number; creatures: { id?: string; name?: string }[] };
const NESTED_PAGE = document<{ trainers: { items: PageItem[] } }>(`query($limit: Int!) {
  trainers(limit: $limit) { items { id nickname creaturesOwned creatures(limit: 10) { id trainer { id } } } }
}`);

describe.each(databases)('relation batching on %s', (kind) => {
  let t: TestApp;
  let viewer: TrainerFixture;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(kind, {}, { onQuery: (sql) => statements.push(sql) });
    viewer = await createTrainer(t.app);
    for (let i = 0; i < 110; i += 1) {
      const { trainer } = await createTrainer(t.app);
      for (let c = 0; c < (i % 4) + 1; c += 1) await createCreature(t.app, trainer.id, { name: `c${c}` });
    }
  });
  afterAll(async () => t.close());

  async function countStatements(limit: number): Promise<{ count: number; items: { creaturesOwned: number; creatures: unknown[] }[] }> {
    statements.length = 0;
    const res = await gql(t.app, NESTED_PAGE, { limit }, viewer.token);
    expect(res.errors).toBeUndefined();
    return { count: statements.length, items: res.data!.trainers.items };
  }

  it('reads a page of trainers with creatures, counts and owners in the same few statements whatever the page size', async () => {
    const small = await countStatements(3);
    const large = await countStatements(100);
    expect(large.items).toHaveLength(100);
    // The viewer, the page with its counts, one batch of creatures; Creature.trainer comes from the page.
    expect(small.count).toBe(3);
    expect(large.count).toBe(small.count);
    for (const item of large.items) expect(item.creatures).toHaveLength(item.creaturesOwned);
  });

  it('reads the counts with the page also when its fields come through a fragment', async () => {
    statements.length = 0;
    const res = await gql<{ trainers: { items: PageItem[] } }>(
      t.app,
      'query { trainers(limit: 5) { ...P } } fragment P on TrainerPage { items { id creaturesOwned creatures(limit: 2) { name } } }',
      {},
      viewer.token,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data!.trainers.items).toHaveLength(5);
    // The fragment is followed, so the counts still come with the page.
    expect(statements).toHaveLength(3);
    for (const item of res.data!.trainers.items) expect(item.creatures.length).toBe(Math.min(2, item.creaturesOwned));
  });

  it('reads trainer(id) with creaturesOwned and checks the caller in one statement', async () => {
    const { trainer } = await createTrainer(t.app);
    await createCreature(t.app, trainer.id, { name: 'one' });
    await createCreature(t.app, trainer.id, { name: 'two' });
    statements.length = 0;
    const res = await gql<{ trainer: unknown }>(
      t.app,
      'query($id: ID!) { trainer(id: $id) { id nickname creaturesOwned } }',
      { id: String(trainer.id) },
      viewer.token,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data!.trainer).toEqual({ id: String(trainer.id), nickname: trainer.nickname, creaturesOwned: 2 });
    expect(statements).toHaveLength(1);
  });

  it('answers REST GET /trainer/:id, count and caller check included, in one statement', async () => {
    const { trainer } = await createTrainer(t.app);
    await createCreature(t.app, trainer.id, { name: 'solo' });
    statements.length = 0;
    const res = await t.app.inject({ method: 'GET', url: `/trainer/${trainer.id}`, headers: { authorization: `Bearer ${viewer.token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: trainer.id, creaturesOwned: 1 });
    expect(statements).toHaveLength(1);
  });

  it('does not count every trainer when a page does not ask for totalCount', async () => {
    statements.length = 0;
    const res = await gql<{ trainers: { items: unknown[] } }>(
      t.app,
      '{ trainers(limit: 5, offset: 100) { items { id } } }',
      {},
      viewer.token,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data!.trainers.items).toHaveLength(5);
    // The caller and the page; no COUNT over the trainer table.
    expect(statements).toHaveLength(2);
    expect(statements.filter((sql) => /COUNT\(\*\)/i.test(sql))).toEqual([]);
  });
});

describe.each(databases)('reads merged across concurrent requests on %s', (kind) => {
  let t: TestApp;
  const statements: string[] = [];
  const TRAINER = document<{ trainer: unknown }>('query($id: ID!) { trainer(id: $id) { id nickname email creaturesOwned } }');

  beforeAll(async () => {
    t = await startTestApp(kind, {}, { onQuery: (sql) => statements.push(sql) });
  });
  afterAll(async () => t.close());

  it('answers each concurrent trainer(id) with its own trainer, count and email rule, in fewer statements than requests', async () => {
    const fixtures: TrainerFixture[] = [];
    for (let i = 0; i < 6; i += 1) {
      const fixture = await createTrainer(t.app);
      for (let c = 0; c < i; c += 1) await createCreature(t.app, fixture.trainer.id, { name: `c${c}` });
      fixtures.push(fixture);
    }
    // Every caller reads every trainer, itself included: 36 requests in flight at once.
    const asks = fixtures.flatMap((viewer) => fixtures.map((target, owned) => ({ viewer, target, owned })));
    statements.length = 0;
    const answers = await Promise.all(
      asks.map(({ viewer, target }) => gql(t.app, TRAINER, { id: String(target.trainer.id) }, viewer.token)),
    );
    answers.forEach((res, i) => {
      const { viewer, target, owned } = asks[i];
      expect(res.errors).toBeUndefined();
      expect(res.data!.trainer).toEqual({
        id: String(target.trainer.id),
        nickname: target.trainer.nickname,
        // The email only to the trainer itself, even when another caller's read shared the statement.
        email: viewer === target ? target.email : null,
        creaturesOwned: owned,
      });
    });
    // One statement per request without the merging; the requests of one turn share one.
    expect(statements.length).toBeLessThanOrEqual(asks.length / 4);
  });

  it('keeps each REST caller its own answer when reads share a statement: 200, 404 and 401 side by side', async () => {
    const [reader, target, gone] = [await createTrainer(t.app), await createTrainer(t.app), await createTrainer(t.app)];
    await createCreature(t.app, target.trainer.id, { name: 'only' });
    await t.app.dataSource.query('DELETE FROM trainer WHERE id = ?', [gone.trainer.id]);
    const get = (id: number, token: string) =>
      t.app.inject({ method: 'GET', url: `/trainer/${id}`, headers: { authorization: `Bearer ${token}` } });
    statements.length = 0;
    const [found, missing, stale, self] = await Promise.all([
      get(target.trainer.id, reader.token),
      get(gone.trainer.id, reader.token),
      get(target.trainer.id, gone.token),
      get(reader.trainer.id, reader.token),
    ]);
    expect(found.statusCode).toBe(200);
    expect(found.json()).toMatchObject({ id: target.trainer.id, creaturesOwned: 1 });
    expect(found.json<{ email?: string }>().email).toBeUndefined();
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(stale.statusCode).toBe(401);
    expect(stale.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(self.statusCode).toBe(200);
    expect(self.json()).toMatchObject({ id: reader.trainer.id, email: reader.email, creaturesOwned: 0 });
    expect(statements.length).toBeLessThan(4);
  });
});
