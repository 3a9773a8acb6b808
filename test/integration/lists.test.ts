import type { FastifyInstance } from 'fastify';
import { databases, runReconcile, startTestInstances } from '../helpers/app';
import { value, graphqlDriver, restDriver } from '../helpers/drivers';
import { createTrainer, unique, type TrainerFixture } from '../helpers/factories';

/*
 * Trainer lists are read from the database's indexes, and their counts and searches from what
 * each write keeps beside the trainer (trainer_count, trainer_nickname_suffix): exact at once after
 * writes through any instance, and, for rows changed by plain SQL, after `npm run reconcile`.
 */

describe.each(databases)('trainer lists across instances on %s', (kind) => {
  let instances: { apps: FastifyInstance[]; url: string; close(): Promise<void> };
  let me: TrainerFixture;
  beforeAll(async () => {
    instances = await startTestInstances(kind, 2);
    me = await createTrainer(instances.apps[0]);
  });
  afterAll(async () => instances.close());

  const listVia = async (app: FastifyInstance, transport: 'rest' | 'graphql', filter?: { nicknameContains?: string }) =>
    value(await (transport === 'rest' ? restDriver(app) : graphqlDriver(app)).listTrainers(me.token, { limit: 100, filter }));
  const sqlCount = async () => {
    const [row] = await instances.apps[0].dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer');
    return Number(row.n);
  };

  it('counts and lists a trainer registered through another instance at once, on both transports', async () => {
    const [a, b] = instances.apps;
    expect((await listVia(b, 'rest')).totalCount).toBe(await sqlCount());
    const stem = unique('Inst').toLowerCase();
    const made = value(
      await graphqlDriver(a).register({
        nickname: stem,
        firstName: 'I',
        lastName: 'N',
        email: `${stem}@example.test`,
        password: 'password-1',
        team: 'VALOR',
      }),
    );
    for (const transport of ['rest', 'graphql'] as const) {
      const page = await listVia(b, transport, { nicknameContains: stem });
      expect(page.items.map((t) => t.id)).toEqual([made.id]);
      expect((await listVia(b, transport)).totalCount).toBe(await sqlCount());
    }
  });

  it('lists trainers inserted by plain SQL out of id order at once, and finds and counts them after npm run reconcile', async () => {
    const [a, b] = instances.apps;
    const [{ top }] = await a.dataSource.query('SELECT MAX(id) AS top FROM trainer');
    const stem = unique('Late').toLowerCase();
    const insert = (id: number, nickname: string) =>
      a.dataSource.query(
        "INSERT INTO trainer (id, nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, 'L', 'T', ?, 'x', 'MYSTIC', '2026-01-01 00:00:00.000')",
        [id, nickname, nickname, `${nickname}@example.test`],
      );
    await insert(Number(top) + 5, `${stem}_b`);
    await insert(Number(top) + 3, `${stem}_a`);
    // Pages read the table itself: both are there at once, in id order, on every instance.
    for (const app of [a, b]) {
      const walked = value(await restDriver(app).listTrainers(me.token, { limit: 100 }));
      expect(walked.items.slice(-2).map((t) => t.nickname)).toEqual([`${stem}_a`, `${stem}_b`]);
    }
    // What the service keeps in each write (counts, search suffixes) follows plain SQL once reconciled.
    expect((await listVia(b, 'graphql', { nicknameContains: stem })).items).toEqual([]);
    await runReconcile(instances.url);
    for (const app of [a, b]) {
      const page = await listVia(app, 'graphql', { nicknameContains: stem });
      expect(page.items.map((t) => t.nickname)).toEqual([`${stem}_a`, `${stem}_b`]);
      expect(page.totalCount).toBe(2);
      expect((await listVia(app, 'rest')).totalCount).toBe(await sqlCount());
    }
  });

  it('is exact again after npm run reconcile, without a restart, after rows were imported and removed by plain SQL while instances serve', async () => {
    const [a, b] = instances.apps;
    const doomed = await createTrainer(a);
    await a.dataSource.query('DELETE FROM trainer WHERE id = ?', [doomed.trainer.id]);
    const stem = unique('imp').toLowerCase();
    for (let batch = 0; batch < 6; batch += 1) {
      const rows = Array.from({ length: 500 }, (_, i) => {
        const nickname = `${stem}_${batch * 500 + i}`;
        return `('${nickname}', '${nickname}', 'I', 'M', '${nickname}@example.test', 'x', 'VALOR', '2026-01-01 00:00:00.000')`;
      });
      await a.dataSource.query(
        `INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES ${rows.join(', ')}`,
      );
    }
    // Reconciling while both instances answer lists and take registrations: no error, nothing lost.
    let serving = true;
    const registered: number[] = [];
    const load = (async () => {
      for (let i = 0; serving; i += 1) {
        const page = await listVia(i % 2 === 0 ? a : b, i % 2 === 0 ? 'rest' : 'graphql');
        expect(page.items.length).toBeGreaterThan(0);
        registered.push((await createTrainer(b)).trainer.id);
      }
    })();
    await runReconcile(instances.url);
    serving = false;
    await load;
    expect(registered.length).toBeGreaterThan(0);
    const total = await sqlCount();
    for (const app of [a, b]) {
      const page = await listVia(app, 'rest');
      expect(page.totalCount).toBe(total);
      expect(page.items.map((t) => t.id)).not.toContain(doomed.trainer.id);
      const valor = value(await restDriver(app).listTrainers(me.token, { limit: 1, filter: { team: 'VALOR' } }));
      const [{ n }] = await a.dataSource.query<{ n: number | string }[]>("SELECT COUNT(*) AS n FROM trainer WHERE team = 'VALOR'");
      expect(valor.totalCount).toBe(Number(n));
      const imported = value(await restDriver(app).listTrainers(me.token, { limit: 1, filter: { nicknameContains: `${stem}_2999` } }));
      expect([imported.totalCount, imported.items[0]?.nickname]).toEqual([1, `${stem}_2999`]);
      const gone = value(await restDriver(app).listTrainers(me.token, { limit: 1, filter: { nicknameContains: doomed.trainer.nickname } }));
      expect(gone.totalCount).toBe(0);
    }
  });
});
