import type { FastifyInstance } from 'fastify';
import { databases, startTestInstances } from '../helpers/app';
import { graphqlDriver, restDriver, type Outcome } from '../helpers/drivers';
import { createTrainer, unique, type TrainerFixture } from '../helpers/factories';

/*
 * Trainer lists come from an index each instance keeps in memory (TrainerIndex): their counts and
 * pages must stay exact after writes through any instance, after rows inserted out of id order,
 * and, for rows changed by plain SQL, once an instance starts afresh.
 */

function value<T>(result: Outcome<T>): T {
  if (!result.ok) throw new Error(`expected success, got ${result.code}`);
  return result.value;
}

describe.each(databases)('trainer lists across instances on %s', (kind) => {
  let instances: { apps: FastifyInstance[]; close(): Promise<void> };
  let me: TrainerFixture;
  beforeAll(async () => {
    // The third instance serves no list until the end: it starts its index from the table then, like a restarted one.
    // One case pages at an offset past the default MAX_OFFSET (12,000 imported trainers).
    instances = await startTestInstances(kind, 3, { MAX_OFFSET: '100000' });
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

  it('finds a trainer whose insert committed after a later id had been seen', async () => {
    const [a] = instances.apps;
    await listVia(a, 'rest');
    const [{ top }] = await a.dataSource.query('SELECT MAX(id) AS top FROM trainer');
    const stem = unique('Late').toLowerCase();
    const insert = (id: number, nickname: string) =>
      a.dataSource.query(
        "INSERT INTO trainer (id, nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, 'L', 'T', ?, 'x', 'MYSTIC', '2026-01-01 00:00:00.000')",
        [id, nickname, nickname, `${nickname}@example.test`],
      );
    await insert(Number(top) + 5, `${stem}_b`);
    expect((await listVia(a, 'graphql', { nicknameContains: stem })).items.map((t) => t.nickname)).toEqual([`${stem}_b`]);
    await insert(Number(top) + 3, `${stem}_a`);
    const page = await listVia(a, 'graphql', { nicknameContains: stem });
    expect(page.items.map((t) => t.nickname)).toEqual([`${stem}_a`, `${stem}_b`]);
    expect(page.totalCount).toBe(2);
    expect((await listVia(a, 'rest')).totalCount).toBe(await sqlCount());
  });

  it('is exact again on an instance that starts afresh after rows were imported and removed by plain SQL', async () => {
    const [a, , fresh] = instances.apps;
    const doomed = await createTrainer(a);
    await listVia(a, 'rest');
    await a.dataSource.query('DELETE FROM trainer WHERE id = ?', [doomed.trainer.id]);
    // More trainers than the index reads in one statement (5,000), as an import would add them.
    const stem = unique('imp').toLowerCase();
    for (let batch = 0; batch < 24; batch += 1) {
      const rows = Array.from({ length: 500 }, (_, i) => {
        const nickname = `${stem}_${batch * 500 + i}`;
        return `('${nickname}', '${nickname}', 'I', 'M', '${nickname}@example.test', 'x', 'VALOR', '2026-01-01 00:00:00.000')`;
      });
      await a.dataSource.query(
        `INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES ${rows.join(', ')}`,
      );
    }
    const total = await sqlCount();
    const page = await listVia(fresh, 'rest');
    expect(page.totalCount).toBe(total);
    expect(page.items.map((t) => t.id)).not.toContain(doomed.trainer.id);
    const rest = restDriver(fresh);
    const last = value(await rest.listTrainers(me.token, { limit: 5, offset: total - 5 }));
    const expected = await a.dataSource.query<{ id: number | string }[]>(`SELECT id FROM trainer ORDER BY id LIMIT 5 OFFSET ${total - 5}`);
    expect(last.items.map((t) => t.id)).toEqual(expected.map((row) => Number(row.id)));
    const imported = value(await rest.listTrainers(me.token, { limit: 1, filter: { nicknameContains: `${stem}_11999` } }));
    expect([imported.totalCount, imported.items[0]?.nickname]).toEqual([1, `${stem}_11999`]);
  });
});
