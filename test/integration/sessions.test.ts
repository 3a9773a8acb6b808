import { createDataSource } from '../../src/db/data-source';
import { runMigrations } from '../../src/db/migrate';
import { loadDatabaseConfig } from '../../src/config';
import { createTestDatabase, databases, runReconcile, startTestApp, type TestApp } from '../helpers/app';
import { createTrainer, signIn } from '../helpers/factories';

/*
 * What keeps the session tables bounded, and the migration that adds them. The session rules
 * seen by clients (refresh, replay, logout) are in scenarios.test.ts, through both transports.
 */

describe.each(databases)('sessions on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => t.close());

  const count = async (sql: string, params: unknown[]) =>
    Number((await t.app.dataSource.query<{ n: number | string }[]>(sql, params))[0].n);

  it('purges expired sessions in batches, and leaves open ones alone', async () => {
    const { trainer } = await createTrainer(t.app);
    const sessions = [];
    for (let i = 0; i < 7; i += 1) sessions.push(await signIn(t.app, trainer.id));
    const expired = sessions.slice(0, 5).map((s) => s.sessionId);
    await t.app.dataSource.query(
      `UPDATE trainer_session SET expires_at = created_at WHERE id IN (${expired.map(() => '?').join(', ')})`,
      expired,
    );
    // Other tests' sessions may have expired too; at least these five go, two per statement.
    expect(await t.app.services.sessions.purgeExpired(new Date(), 2)).toBeGreaterThanOrEqual(5);
    expect(await count(`SELECT COUNT(*) AS n FROM trainer_session WHERE trainer_id = ?`, [trainer.id])).toBe(3);
    for (const open of sessions.slice(5)) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/trainer/authenticate/refresh',
        payload: { refreshToken: open.refreshToken },
      });
      expect(res.statusCode).toBe(200);
    }
  });

  it('keeps one row per session, however often it is refreshed', async () => {
    const { trainer } = await createTrainer(t.app);
    const before = await count('SELECT COUNT(*) AS n FROM trainer_session WHERE trainer_id = ?', [trainer.id]);
    let { refreshToken } = await signIn(t.app, trainer.id);
    for (let i = 0; i < 15; i += 1) {
      const res = await t.app.inject({ method: 'POST', url: '/trainer/authenticate/refresh', payload: { refreshToken } });
      expect(res.statusCode).toBe(200);
      refreshToken = res.json<{ refreshToken: string }>().refreshToken;
    }
    expect(await count('SELECT COUNT(*) AS n FROM trainer_session WHERE trainer_id = ?', [trainer.id])).toBe(before + 1);
  });
});

describe.each(databases)('the migrations since the sessions, on %s', (kind) => {
  it('revert and apply again, leaving trainers and creatures alone', async () => {
    const database = await createTestDatabase(kind);
    const dataSource = createDataSource(loadDatabaseConfig({ DATABASE_URL: database.url }));
    const tables = async () => {
      const rows = await dataSource.query<{ name: string }[]>(
        dataSource.options.type === 'better-sqlite3'
          ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('trainer_session', 'trainer')"
          : "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ('trainer_session', 'trainer')",
      );
      return rows.map((row) => row.name).sort();
    };
    const eventSeq = async () =>
      (await dataSource.query<{ seq: number | string }[]>('SELECT event_seq AS seq FROM trainer')).map((row) => Number(row.seq));
    const owned = async () =>
      (await dataSource.query<{ n: number | string }[]>('SELECT creatures_owned AS n FROM trainer')).map((row) => Number(row.n));
    const restJson = async () => (await dataSource.query<{ j: string }[]>('SELECT rest_json AS j FROM trainer')).map((row) => row.j);
    const previous = async () => dataSource.query<unknown[]>('SELECT previous_hash, previous_until FROM trainer_session');
    try {
      await dataSource.initialize();
      await runMigrations(dataSource);
      await dataSource.query(
        "INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at, event_seq) VALUES ('mig', 'mig', 'A', 'B', 'mig@example.com', 'x', 'VALOR', '2026-01-01 00:00:00.000', 7)",
      );
      await dataSource.query(
        "INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) SELECT n, n, 1, 1, id, created_at FROM trainer, (SELECT 'one' AS n UNION ALL SELECT 'two') names",
      );
      expect(await tables()).toEqual(['trainer', 'trainer_session']);
      // Inserted by plain SQL: counted by npm run reconcile.
      expect(await owned()).toEqual([0]);
      await previous();
      const suffixes = async () =>
        (await dataSource.query<{ suffix: string }[]>('SELECT suffix FROM trainer_nickname_suffix ORDER BY suffix')).map(
          (row) => row.suffix,
        );
      // The newest first: the kept creature events (their tables go),
      const keptEvents = async () => dataSource.query<unknown[]>('SELECT seq FROM creature_event');
      expect(await keptEvents()).toEqual([]);
      await dataSource.undoLastMigration();
      await expect(keptEvents()).rejects.toThrow();
      await expect(dataSource.query('SELECT at FROM creature_event_pruning')).rejects.toThrow();
      // then the count slots (each bucket's slots summed into one row again),
      await dataSource.query("INSERT INTO trainer_count (bucket, team, slot, n) VALUES (9, 'MYSTIC', 1, 2), (9, 'MYSTIC', 2, 3)");
      await dataSource.undoLastMigration();
      const bucket9 = await dataSource.query<{ n: number | string }[]>('SELECT n FROM trainer_count WHERE bucket = 9');
      expect(bucket9.map((row) => Number(row.n))).toEqual([5]);
      await expect(dataSource.query('SELECT slot FROM trainer_count')).rejects.toThrow();
      // then the replicas' heartbeat table (MySQL only),
      const heartbeat = async () => dataSource.query<unknown[]>('SELECT id FROM replica_heartbeat');
      if (dataSource.options.type !== 'better-sqlite3') expect(await heartbeat()).toEqual([]);
      await dataSource.undoLastMigration();
      await expect(heartbeat()).rejects.toThrow();
      // the creature pages' index (the creatures stay),
      await dataSource.undoLastMigration();
      expect(await dataSource.query<unknown[]>('SELECT id FROM creature')).toHaveLength(2);
      // then the lists' tables (rest_json back), the 64-bit ids, the name keys (data only), the refresh reuse, the REST JSON, the creature count, the event sequence, then the sessions.
      await dataSource.undoLastMigration();
      await expect(suffixes()).rejects.toThrow();
      expect(await restJson()).toEqual([
        ',"nickname":"mig","firstName":"A","lastName":"B","team":"VALOR","creaturesOwned":0,"createdAt":"2026-01-01T00:00:00.000Z"',
      ]);
      await dataSource.undoLastMigration();
      await dataSource.undoLastMigration();
      await previous();
      await dataSource.undoLastMigration();
      await expect(previous()).rejects.toThrow();
      await dataSource.undoLastMigration();
      await expect(restJson()).rejects.toThrow();
      expect(await owned()).toEqual([0]);
      const [creatures] = await dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature');
      expect(Number(creatures.n)).toBe(2);
      await dataSource.undoLastMigration();
      await expect(owned()).rejects.toThrow();
      await dataSource.undoLastMigration();
      await expect(eventSeq()).rejects.toThrow();
      await dataSource.undoLastMigration();
      expect(await tables()).toEqual(['trainer']);
      await runMigrations(dataSource);
      expect(await tables()).toEqual(['trainer', 'trainer_session']);
      await previous();
      // The trainer is still there, its count of events started again from 0, its creatures counted.
      expect(await eventSeq()).toEqual([0]);
      expect(await owned()).toEqual([2]);
      // No REST representation stays in the database; the lists' tables were filled from the trainer there is.
      await expect(restJson()).rejects.toThrow();
      expect(await suffixes()).toEqual(['ig', 'mig']);
      const counts = await dataSource.query<{ bucket: number | string; team: string; n: number | string }[]>(
        'SELECT bucket, team, n FROM trainer_count',
      );
      expect(counts.map((row) => [Number(row.bucket), row.team, Number(row.n)])).toEqual([[0, 'VALOR', 1]]);
      // Nothing is recounted when migrations run (or an instance starts): npm run reconcile does it.
      await dataSource.query('DELETE FROM creature');
      await runMigrations(dataSource);
      expect(await owned()).toEqual([2]);
      await runReconcile(database.url);
      expect(await owned()).toEqual([0]);
    } finally {
      await dataSource.destroy();
      await database.drop();
    }
  });
});
