import { databases, startTestApp, type TestApp } from '../helpers/app';
import { createCreature, createTrainer, type TrainerFixture } from '../helpers/factories';
import { gql } from '../helpers/graphql';

const NESTED_PAGE = `query($limit: Int!) {
  trainers(limit: $limit) { items { id nickname creaturesOwned creatures(limit: 10) { id trainer { id } } } }
}`;

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
    return { count: statements.length, items: res.data.trainers.items };
  }

  it('reads a page of trainers with creatures, counts and owners in the same few statements whatever the page size', async () => {
    const small = await countStatements(3);
    const large = await countStatements(100);
    expect(large.items).toHaveLength(100);
    // The viewer, the page, one batch of creatures, one of counts; Creature.trainer comes from the page.
    expect(small.count).toBe(4);
    expect(large.count).toBe(small.count);
    for (const item of large.items) expect(item.creatures).toHaveLength(item.creaturesOwned);
  });
});
