import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { createTestDatabase, databases, runReconcile, testConfig } from '../helpers/app';
import { value, graphqlDriver, restDriver, type Driver } from '../helpers/drivers';
import { createTrainer, unique, type TrainerFixture } from '../helpers/factories';

/*
 * creaturesOwned is a column of the trainer's row, changed in the transaction of every creature
 * create and delete, and recounted from the creature rows by `npm run reconcile` (for rows
 * changed by plain SQL). Whatever path a count is read by, it must equal the rows.
 */

describe.each(databases)('creaturesOwned on %s', (kind) => {
  let database: { url: string; drop(): Promise<void> };
  const apps: FastifyInstance[] = [];
  let owner: TrainerFixture;
  let viewer: TrainerFixture;

  const start = async (): Promise<FastifyInstance> => {
    const app = await buildApp(testConfig(database.url));
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    await start();
    await start();
    owner = await createTrainer(apps[0]);
    viewer = await createTrainer(apps[0]);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database.drop();
  });

  const rows = async (trainerId: number): Promise<number> => {
    const [row] = await apps[0].dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature WHERE trainer_id = ?', [
      trainerId,
    ]);
    return Number(row.n);
  };

  /** The count as every read path gives it, through `app`: both transports, by id, in a list, and the REST creature list's total. */
  const countsVia = async (app: FastifyInstance, trainerId: number): Promise<number[]> => {
    const counts: number[] = [];
    for (const driver of [restDriver(app), graphqlDriver(app)] as Driver[]) {
      counts.push(value(await driver.getTrainer(viewer.token, String(trainerId))).creaturesOwned);
      const page = value(await driver.listTrainers(viewer.token, { limit: 100 }));
      counts.push(page.items.find((item) => item.id === trainerId)!.creaturesOwned);
      counts.push(value(await driver.listCreatures(viewer.token, String(trainerId), { limit: 1 })).totalCount);
    }
    const nested = await app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
      payload: { query: `{ trainers(limit: 100) { items { id creaturesOwned } } me { id } }` },
    });
    const items = nested.json<{ data: { trainers: { items: { id: string; creaturesOwned: number }[] } } }>().data.trainers.items;
    counts.push(items.find((item) => item.id === String(trainerId))!.creaturesOwned);
    return counts;
  };

  it('equals the creature rows after racing creates, duplicates and deletes through two instances and both transports', async () => {
    const [a, b] = apps;
    const via = (i: number): Driver => (i % 2 === 0 ? restDriver(a) : graphqlDriver(b));
    const names = Array.from({ length: 12 }, (_, i) => `racer ${i}`);
    // Each name twice at once: one create of each pair wins, the other is DUPLICATE_CREATURE.
    const created = await Promise.all(
      [...names, ...names].map((name, i) => via(i).createCreature(owner.token, String(owner.trainer.id), { name, speciesId: 1 })),
    );
    expect(created.filter((r) => r.ok)).toHaveLength(12);
    expect(created.filter((r) => !r.ok).map((r) => !r.ok && r.code)).toEqual(Array(12).fill('DUPLICATE_CREATURE'));
    const ids = created.flatMap((r) => (r.ok ? [r.value.id] : []));
    // Five deleted, each twice at once through either instance: one of each pair finds nothing.
    const doomed = ids.slice(0, 5);
    const deleted = await Promise.all(
      [...doomed, ...doomed].map((id, i) => via(i + 1).deleteCreature(owner.token, String(owner.trainer.id), String(id))),
    );
    expect(deleted.filter((r) => r.ok)).toHaveLength(5);
    expect(deleted.filter((r) => !r.ok).map((r) => !r.ok && r.code)).toEqual(Array(5).fill('NOT_FOUND'));

    expect(await rows(owner.trainer.id)).toBe(7);
    expect(await countsVia(a, owner.trainer.id)).toEqual(Array(7).fill(7));
    expect(await countsVia(b, owner.trainer.id)).toEqual(Array(7).fill(7));
  });

  it('counts rows added and removed by plain SQL after npm run reconcile, with no restart and nothing done at start', async () => {
    const other = await createTrainer(apps[0]);
    value(await restDriver(apps[0]).createCreature(other.token, String(other.trainer.id), { name: 'kept', speciesId: 2 }));
    const gone = value(await restDriver(apps[0]).createCreature(other.token, String(other.trainer.id), { name: 'gone', speciesId: 2 }));
    const stem = unique('imp');
    const imported = Array.from(
      { length: 30 },
      (_, i) => `('${stem} ${i}', '${stem} ${i}', 3, 1, ${other.trainer.id}, '2026-01-01 00:00:00.000')`,
    );
    await apps[0].dataSource.query(
      `INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES ${imported.join(', ')}`,
    );
    await apps[0].dataSource.query('DELETE FROM creature WHERE id = ?', [gone.id]);
    expect(await rows(other.trainer.id)).toBe(31);

    // Starting an instance reads nothing of the tables: the count is still the service's own.
    const fresh = await start();
    expect(await countsVia(fresh, other.trainer.id)).toEqual(Array(7).fill(2));
    await runReconcile(database.url);
    expect(await countsVia(fresh, other.trainer.id)).toEqual(Array(7).fill(31));
    // And the service keeps counting from there.
    value(await graphqlDriver(fresh).createCreature(other.token, String(other.trainer.id), { name: 'after', speciesId: 2 }));
    expect(await countsVia(apps[0], other.trainer.id)).toEqual(Array(7).fill(32));
  });
});
