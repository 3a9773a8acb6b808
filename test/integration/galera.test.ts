import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { testConfig } from '../helpers/app';
import { createTrainer, unique } from '../helpers/factories';
import { GaleraCluster } from '../helpers/galera';

/*
 * The service on a private three-node MariaDB Galera cluster (test/helpers/galera.ts): three
 * instances, each on its own node, started at once, then writing through all three. Galera is a
 * MySQL deployment, so this suite has no SQLite half.
 */

const DATABASE = 'registry_galera';

describe('three instances on a three-node Galera cluster', () => {
  let cluster: GaleraCluster | undefined;
  const apps: FastifyInstance[] = [];
  beforeAll(async () => {
    cluster = await GaleraCluster.start('the Galera suite is');
    if (!cluster) return;
    await cluster.query(0, `CREATE DATABASE ${DATABASE} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    // All three at once, each migrating through its own node.
    apps.push(...(await Promise.all([0, 1, 2].map((i) => buildApp(testConfig(cluster!.url(i, DATABASE)))))));
    for (const app of apps) await app.ready();
  }, 180_000);
  afterAll(async () => {
    for (const app of apps) await app.close();
    await cluster?.stop();
  }, 60_000);

  it('migrates once: every migration recorded exactly once, the same schema on every node', async () => {
    if (!cluster) return;
    for (const app of apps) expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const recorded = (await cluster.query(0, `SELECT name, COUNT(*) AS n FROM ${DATABASE}.migrations GROUP BY name`)) as {
      name: string;
      n: number | string;
    }[];
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.filter((row) => Number(row.n) !== 1)).toEqual([]);
    const schema = (i: number) =>
      cluster!.query(
        i,
        `SELECT table_name, column_name, column_type FROM information_schema.columns WHERE table_schema = ? ORDER BY table_name, column_name`,
        [DATABASE],
      );
    const first = JSON.stringify(await schema(0));
    expect([JSON.stringify(await schema(1)), JSON.stringify(await schema(2))]).toEqual([first, first]);
  });

  it('30 registrations and 30 creature creations through three nodes at once: every write answered and stored once, counts exact everywhere', async () => {
    if (!cluster) return;
    const owner = await createTrainer(apps[0]);
    const register = (app: FastifyInstance) => {
      const nickname = unique('gal');
      return app.inject({
        method: 'POST',
        url: '/trainer',
        payload: { nickname, firstName: 'G', lastName: 'C', email: `${nickname}@example.test`, password: 'password-123', team: 'VALOR' },
      });
    };
    const create = (app: FastifyInstance, i: number) =>
      app.inject({
        method: 'POST',
        url: `/trainer/${owner.trainer.id}/creature`,
        headers: { authorization: `Bearer ${owner.token}` },
        payload: { name: `Galera ${i}`, speciesId: 1 },
      });
    // Ten rounds of a registration and a creation through each node at once (registrations
    // hash passwords, which each instance does a few at a time: more at once would be refused).
    const answers = [];
    for (let round = 0; round < 10; round += 1) {
      answers.push(...(await Promise.all(apps.flatMap((app, i) => [register(app), create(app, round * 3 + i)]))));
    }
    expect(answers.map((answer) => answer.statusCode).filter((status) => status !== 201)).toEqual([]);
    const [{ n: creatures }] = (await cluster.query(0, `SELECT COUNT(*) AS n FROM ${DATABASE}.creature WHERE trainer_id = ?`, [
      owner.trainer.id,
    ])) as { n: number | string }[];
    expect(Number(creatures)).toBe(30);
    const [{ n: trainers }] = (await cluster.query(0, `SELECT COUNT(*) AS n FROM ${DATABASE}.trainer`)) as { n: number | string }[];
    for (const app of apps) {
      const me = await app.inject({
        method: 'GET',
        url: `/trainer/${owner.trainer.id}`,
        headers: { authorization: `Bearer ${owner.token}` },
      });
      expect(me.json<{ creaturesOwned: number }>().creaturesOwned).toBe(30);
      const list = await app.inject({ method: 'GET', url: '/trainer?limit=1', headers: { authorization: `Bearer ${owner.token}` } });
      expect(list.json<{ totalCount: number }>().totalCount).toBe(Number(trainers));
    }
  });
});
