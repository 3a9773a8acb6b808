import type { FastifyInstance } from 'fastify';
import { databases, startTestApp, type TestApp } from '../helpers/app';
import { restDriver, value } from '../helpers/drivers';
import { createTrainer, type TrainerFixture } from '../helpers/factories';

/*
 * Every write of a trainer's row locks it by its primary key. MariaDB, left to choose, updated a
 * row by id through IX_trainer_id (an index on the id alone): the index entry locked before the
 * row, where a write that had locked the row first (SELECT ... FOR UPDATE) then wanted the entry.
 * A creature's create and another's delete of one trainer deadlocked that way, and were retried
 * (or, after eight losses, answered 503).
 */

const retriedOf = async (app: FastifyInstance): Promise<number> => {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  return Number(/^db_lock_conflicts_total\{outcome="retried"\} (\d+)$/m.exec(text)?.[1] ?? 0);
};

describe.each(databases)('write locks on %s', (kind) => {
  let t: TestApp;
  let app: FastifyInstance;
  let owner: TrainerFixture;

  beforeAll(async () => {
    t = await startTestApp(kind);
    app = t.app;
    owner = await createTrainer(app);
  });
  afterAll(() => t.close());

  it("meets no deadlock when one trainer's creatures are created, renamed and deleted at once", async () => {
    const rest = restDriver(app);
    const trainerId = String(owner.trainer.id);
    const before = await retriedOf(app);
    await Promise.all(
      Array.from({ length: 16 }, async (_, worker) => {
        for (let round = 0; round < 8; round += 1) {
          const creature = value(await rest.createCreature(owner.token, trainerId, { name: `w${worker} r${round}`, speciesId: 1 }));
          value(await rest.updateCreature(owner.token, trainerId, String(creature.id), { name: `w${worker} r${round} renamed` }));
          value(await rest.deleteCreature(owner.token, trainerId, String(creature.id)));
        }
      }),
    );
    expect(await retriedOf(app)).toBe(before);
    const [row] = await app.dataSource.query<{ n: number | string; owned: number | string }[]>(
      'SELECT (SELECT COUNT(*) FROM creature WHERE trainer_id = ?) AS n, (SELECT creatures_owned FROM trainer WHERE id = ?) AS owned',
      [owner.trainer.id, owner.trainer.id],
    );
    expect([Number(row.n), Number(row.owned)]).toEqual([0, 0]);
  });
});
