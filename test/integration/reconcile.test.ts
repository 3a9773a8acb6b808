import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { createDataSource } from '../../src/db/data-source';
import { databases, runReconcile, startTestApp, type TestApp } from '../helpers/app';
import { gql } from '../helpers/graphql';
import { value, graphqlDriver, restDriver } from '../helpers/drivers';
import { createCreature, createTrainer, TEST_PASSWORD, unique, type TrainerFixture } from '../helpers/factories';
import { ReconcileQueries, TrainerQueries } from '../../src/trainers/trainer.queries';
import { Sql } from '../../src/db/sql';
import { AppError } from '../../src/errors';
import { Team } from '../../src/trainers/team';

/*
 * `npm run reconcile` beside instances that serve: it never removes what a write made while it
 * ran, writes never fail because it runs (a lock conflict is retried, never a 500), and once it
 * has finished every count and search suffix matches the rows.
 */

const COUNT_BUCKET = 65536;
const root = join(__dirname, '..', '..');

/** `npm run reconcile` in a process of its own (through ts-node, so no build is needed): its exit code and output. */
function reconcileProcess(databaseUrl: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/reconcile.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}
const TEAMS = [Team.MYSTIC, Team.VALOR, Team.INSTINCT];

interface Conflicts {
  retried: number;
  gaveUp: number;
}

/** The lock conflicts an app's statements met so far, as GET /metrics shows them (NaN when a series is missing). */
async function appConflicts(t: TestApp): Promise<Conflicts> {
  const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  const read = (outcome: string) =>
    Number(new RegExp(`^db_lock_conflicts_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
  return { retried: read('retried'), gaveUp: read('gave_up') };
}

/** The lock conflicts a Sql of its own (reconcile's) met, from its metrics (NaN when a series is missing). */
async function sqlConflicts(sql: Sql): Promise<Conflicts> {
  const { values } = await sql.metrics.lockConflicts.get();
  const read = (outcome: string) => values.find((v) => v.labels.outcome === outcome)?.value ?? NaN;
  return { retried: read('retried'), gaveUp: read('gave_up') };
}

/** Where the trainer table's next id will be, set by plain SQL (the auto-increment counter). */
async function nextIdFrom(t: TestApp, id: number): Promise<void> {
  if (t.kind === 'mysql') await t.app.dataSource.query(`ALTER TABLE trainer AUTO_INCREMENT = ${id}`);
  else await t.app.dataSource.query("UPDATE sqlite_sequence SET seq = ? WHERE name = 'trainer'", [id - 1]);
}

/** Trainers written by plain SQL (an import): no suffixes, no counts. */
async function importTrainers(t: TestApp, stem: string, n: number): Promise<void> {
  for (let from = 0; from < n; from += 500) {
    const rows = Array.from({ length: Math.min(500, n - from) }, (_, i) => {
      const nickname = `${stem}_${from + i}`;
      return `('${nickname}', '${nickname}', 'I', 'M', '${nickname}@example.test', 'x', '${TEAMS[i % 3]}', '2026-01-01 00:00:00.000')`;
    });
    await t.app.dataSource.query(
      `INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES ${rows.join(', ')}`,
    );
  }
}

/**
 * What the database holds beside the trainers, against what the trainer rows say it should be:
 * the differences (empty when exact).
 */
async function drift(t: TestApp): Promise<{ suffixes: string[]; counts: string[]; owned: number }> {
  const q = <T>(sql: string) => t.app.dataSource.query<T[]>(sql);
  const trainers = await q<{ id: number | string; k: string; team: string }>('SELECT id, nickname_key AS k, team FROM trainer');
  const expected = new Set<string>();
  const counts = new Map<string, number>();
  for (const { id, k, team } of trainers) {
    for (let n = 1; n < k.length; n += 1) expected.add(`${k.slice(n - 1)} ${Number(id)}`);
    const key = `${Math.floor(Number(id) / COUNT_BUCKET)} ${team}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const held = new Set(
    (await q<{ s: string; id: number | string }>('SELECT suffix AS s, trainer_id AS id FROM trainer_nickname_suffix')).map(
      (r) => `${r.s} ${Number(r.id)}`,
    ),
  );
  const suffixes = [
    ...[...expected].filter((s) => !held.has(s)).map((s) => `missing ${s}`),
    ...[...held].filter((s) => !expected.has(s)).map((s) => `extra ${s}`),
  ];
  const heldCounts = new Map<string, number>();
  for (const r of await q<{ b: number | string; team: string; n: number | string }>('SELECT bucket AS b, team, n FROM trainer_count')) {
    if (Number(r.n) !== 0) heldCounts.set(`${Number(r.b)} ${r.team}`, Number(r.n));
  }
  const countDrift = [...new Set([...counts.keys(), ...heldCounts.keys()])]
    .filter((key) => counts.get(key) !== heldCounts.get(key))
    .map((key) => `${key}: ${heldCounts.get(key) ?? 0} held, ${counts.get(key) ?? 0} rows`);
  const [owned] = await q<{ n: number | string }>(
    'SELECT COUNT(*) AS n FROM trainer t WHERE t.creatures_owned <> (SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id)',
  );
  return { suffixes: suffixes.slice(0, 20), counts: countDrift, owned: Number(owned.n) };
}

const registration = (nickname: string, team: Team = Team.VALOR) => ({
  nickname,
  firstName: 'Re',
  lastName: 'Con',
  email: `${nickname.toLowerCase()}@example.test`,
  password: TEST_PASSWORD,
  team,
});

/** A trainer written through the service's insert, without hashing a password (a registration's write). */
const insertDirectly = (t: TestApp, nickname: string, team: (typeof TEAMS)[number]) =>
  t.app.services.trainers.insertHashed({
    nickname,
    nicknameKey: nickname.toLowerCase(),
    firstName: 'S',
    lastName: 'T',
    email: `${nickname.toLowerCase()}@example.test`,
    passwordHash: 'x',
    team,
    createdAt: new Date(),
  });

describe.each(databases)('npm run reconcile while instances serve, on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  beforeAll(async () => {
    t = await startTestApp(kind);
    me = await createTrainer(t.app);
  });
  afterAll(async () => t.close());

  const sqlCount = async (where = '') => {
    const [row] = await t.app.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM trainer${where}`);
    return Number(row.n);
  };

  it('keeps the suffixes and the count of trainers registered after it read the last trainer and the last bucket', async () => {
    await importTrainers(t, unique('imp').toLowerCase(), 30);
    const chunk = 10;
    const late: number[] = [];
    const register = async (nickname: string) => late.push(value(await restDriver(t.app).register(registration(nickname))).id);
    const first = unique('Late');
    const second = unique('Later');
    // Each registers once reconcile has read: after its last (empty) page of trainers, then after its last bucket (in a new one).
    class Interleaved extends ReconcileQueries {
      private walked = false;
      private counted = false;
      override async idsAfter(...args: Parameters<ReconcileQueries['idsAfter']>): Promise<number[]> {
        const ids = await super.idsAfter(...args);
        if (ids.length === 0 && !this.walked) {
          this.walked = true;
          await register(first);
        }
        return ids;
      }
      override async nextBucket(...args: Parameters<ReconcileQueries['nextBucket']>): Promise<number | null> {
        const bucket = await super.nextBucket(...args);
        if (bucket === null && !this.counted) {
          this.counted = true;
          await nextIdFrom(t, 3 * COUNT_BUCKET + 5);
          await register(second);
        }
        return bucket;
      }
    }
    await runReconcile(t.config.database, { chunk, queries: (sql: Sql) => new Interleaved(sql) });
    expect(late).toHaveLength(2);
    expect(late[1]).toBe(3 * COUNT_BUCKET + 5);
    for (const driver of [restDriver(t.app), graphqlDriver(t.app)]) {
      for (const [nickname, id] of [
        [first, late[0]],
        [second, late[1]],
      ] as const) {
        const found = value(await driver.listTrainers(me.token, { limit: 5, filter: { nicknameContains: nickname.slice(2) } }));
        expect([found.totalCount, found.items.map((item) => item.id)]).toEqual([1, [id]]);
      }
      expect(value(await driver.listTrainers(me.token, { limit: 1 })).totalCount).toBe(await sqlCount());
      expect(value(await driver.listTrainers(me.token, { limit: 1, filter: { team: 'VALOR' } })).totalCount).toBe(
        await sqlCount(" WHERE team = 'VALOR'"),
      );
    }
    expect(await drift(t)).toEqual({ suffixes: [], counts: [], owned: 0 });
  });

  it('removes the creatures and kept events that deletions stopped midway left behind (one trainer inside the id range, one at its top), and no other', async () => {
    const before = await createTrainer(t.app);
    const kept = await createTrainer(t.app);
    const last = await createTrainer(t.app);
    for (const name of ['Left one', 'Left two', 'Left three']) {
      for (const trainer of [before, kept, last]) await createCreature(t.app, trainer.trainer.id, { name });
    }
    // Only a deletion's first transaction: the trainer, its sessions and its counts go, its
    // creatures stay, as when the process stops before it has removed them.
    const queries = new TrainerQueries(new Sql(t.app.dataSource, { timeoutMs: 5000, slowMs: 5000 }));
    for (const trainer of [before, last]) expect(await queries.deleteAccount(trainer.trainer.id)).not.toBeNull();
    const creaturesOf = async (trainer: TrainerFixture) => {
      const [row] = await t.app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM creature WHERE trainer_id = ?', [
        trainer.trainer.id,
      ]);
      return Number(row.n);
    };
    expect([await creaturesOf(before), await creaturesOf(kept), await creaturesOf(last)]).toEqual([3, 3, 3]);
    // Their kept events stay too (erased after the creatures): as many as each had, by plain SQL here.
    for (const trainer of [before, kept, last]) {
      await t.app.dataSource.query(
        "INSERT INTO creature_event (trainer_id, seq, kind, creature_id, name, species_id, level, created_at, at) VALUES (?, 1, 'CREATED', 1, 'Left', 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')",
        [trainer.trainer.id],
      );
    }
    const eventsOf = async (trainer: TrainerFixture) => {
      const [row] = await t.app.dataSource.query<{ n: number | string }[]>(
        'SELECT COUNT(*) AS n FROM creature_event WHERE trainer_id = ?',
        [trainer.trainer.id],
      );
      return Number(row.n);
    };
    await runReconcile(t.config.database);
    expect([await creaturesOf(before), await creaturesOf(kept), await creaturesOf(last)]).toEqual([0, 3, 0]);
    expect([await eventsOf(before), await eventsOf(kept), await eventsOf(last)]).toEqual([0, 1, 0]);
    expect(value(await restDriver(t.app).getTrainer(kept.token, String(kept.trainer.id))).creaturesOwned).toBe(3);
    expect(await drift(t)).toEqual({ suffixes: [], counts: [], owned: 0 });
  });

  it('runs beside a stream of registrations, renames, deletions and creature writes: none fails, and afterwards every count and suffix is exact', async () => {
    await importTrainers(t, unique('bulk').toLowerCase(), 1000);
    const members = await Promise.all(Array.from({ length: 24 }, () => createTrainer(t.app)));
    const failures: string[] = [];
    const registered: { id: number; nickname: string }[] = [];
    const note = (what: string, error: unknown) =>
      failures.push(`${what}: ${error instanceof AppError ? error.code : error instanceof Error ? error.message : String(error)}`);
    let running = true;

    const registering = async (lane: number) => {
      for (let i = 0; running; i += 1) {
        const nickname = unique(`Str${lane}`);
        if (i % 10 === 0) {
          const made = await restDriver(t.app).register(registration(nickname, TEAMS[i % 3]));
          if (made.ok) registered.push({ id: made.value.id, nickname });
          else failures.push(`register: ${made.status} ${made.code}`);
          continue;
        }
        try {
          const id = await insertDirectly(t, nickname, TEAMS[i % 3]);
          registered.push({ id, nickname });
        } catch (error) {
          note('insert', error);
        }
      }
    };
    const changing = async (lane: number) => {
      for (let i = 0; running; i += 1) {
        const member = members[lane * 4 + (i % 4)];
        const driver = i % 2 === 0 ? restDriver(t.app) : graphqlDriver(t.app);
        const renamed = await driver.updateMe(member.token, String(member.trainer.id), { nickname: unique('Ren'), team: TEAMS[i % 3] });
        if (!renamed.ok) failures.push(`rename: ${renamed.status} ${renamed.code}`);
        const made = await driver.createCreature(member.token, String(member.trainer.id), { name: unique('cr'), speciesId: 25, level: 5 });
        if (!made.ok) failures.push(`creature: ${made.status} ${made.code}`);
      }
    };
    const deleting = async () => {
      for (const member of members.slice(12)) {
        if (!running) return;
        try {
          await t.app.services.accounts.remove(member.trainer.id);
        } catch (error) {
          note('delete', error);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    const load = Promise.all([
      registering(1),
      registering(2),
      registering(3),
      registering(4),
      changing(0),
      changing(1),
      changing(2),
      deleting(),
    ]);
    const rounds: unknown[] = [];
    const sqls: Sql[] = [];
    const before = await appConflicts(t);
    try {
      // Several rounds, until enough registrations have run beside them. A short pause between rounds
      // lets the writers in (back-to-back rounds on a loaded machine starved them on SQLite's one
      // writer); the bound is time, not a round count, so a slow machine runs more rounds, not fewer writes.
      const deadline = Date.now() + 60_000;
      for (let round = 0; (round < 6 || registered.length < 60) && Date.now() < deadline; round += 1) {
        rounds.push(
          await runReconcile(t.config.database, { chunk: 100, queries: (sql) => (sqls.push(sql), new ReconcileQueries(sql)) }).catch(
            (error: unknown) => `reconcile: ${String(error)}`,
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      running = false;
      await load;
    }
    const after = await appConflicts(t);
    const conflicts = {
      app: { retried: after.retried - before.retried, gaveUp: after.gaveUp - before.gaveUp },
      reconcile: (await Promise.all(sqls.map(sqlConflicts))).reduce(
        (sum, counted) => ({ retried: sum.retried + counted.retried, gaveUp: sum.gaveUp + counted.gaveUp }),
        { retried: 0, gaveUp: 0 },
      ),
    };
    if (process.env.RECONCILE_STRESS_REPORT)
      process.stdout.write(`${kind}: ${rounds.length} rounds, ${registered.length} registered, conflicts ${JSON.stringify(conflicts)}\n`);
    expect(rounds.filter((r) => typeof r === 'string')).toEqual([]);
    expect(failures).toEqual([]);
    // No write and no reconcile transaction gave up on a lock conflict (the design takes locks in one
    // order, so conflicts are rare; one that a retry got past is allowed: a loaded CI machine may see one).
    expect([conflicts.app.gaveUp, conflicts.reconcile.gaveUp]).toEqual([0, 0]);
    expect(registered.length).toBeGreaterThanOrEqual(60);

    expect(await drift(t)).toEqual({ suffixes: [], counts: [], owned: 0 });
    const rest = restDriver(t.app);
    expect(value(await rest.listTrainers(me.token, { limit: 1 })).totalCount).toBe(await sqlCount());
    for (const { id, nickname } of registered) {
      const found = value(await rest.listTrainers(me.token, { limit: 5, filter: { nicknameContains: nickname.slice(3) } }));
      expect([nickname, found.items.map((item) => item.id)]).toEqual([nickname, [id]]);
    }
  }, 150_000);
  it('runs in a process of its own beside a stream of registrations (SQLite: another connection to the file): none fails, and everything is exact after', async () => {
    await importTrainers(t, unique('proc').toLowerCase(), 3000);
    const failures: string[] = [];
    const registered: { id: number; nickname: string }[] = [];
    let running = true;
    const registering = async (lane: number) => {
      for (let i = 0; running; i += 1) {
        const nickname = unique(`Pro${lane}`);
        try {
          const id = await insertDirectly(t, nickname, TEAMS[i % 3]);
          registered.push({ id, nickname });
        } catch (error) {
          failures.push(`insert: ${error instanceof AppError ? error.code : String(error)}`);
        }
        // SQLite answers without I/O: the loop gives the event loop a turn (the child's exit is an event).
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const before = await appConflicts(t);
    const load = Promise.all([registering(1), registering(2), registering(3)]);
    const runs: { code: number | null; output: string }[] = [];
    try {
      for (let run = 0; run < 2; run += 1)
        runs.push(await reconcileProcess(t.config.database.type === 'sqlite' ? `sqlite:${t.config.database.path}` : t.config.database.url));
    } finally {
      running = false;
      await load;
    }
    const after = await appConflicts(t);
    const retried = after.retried - before.retried;
    if (process.env.RECONCILE_STRESS_REPORT)
      process.stdout.write(`${kind} process: ${registered.length} registered, app retried ${retried}\n`);
    expect(runs.filter((r) => r.code !== 0)).toEqual([]);
    expect(failures).toEqual([]);
    expect(after.gaveUp - before.gaveUp).toBe(0);
    expect(registered.length).toBeGreaterThan(0);
    expect(await drift(t)).toEqual({ suffixes: [], counts: [], owned: 0 });
    for (const { id, nickname } of registered.slice(-20)) {
      const found = value(await restDriver(t.app).listTrainers(me.token, { limit: 5, filter: { nicknameContains: nickname.slice(3) } }));
      expect(found.items.map((item) => item.id)).toEqual([id]);
    }
  });
});

describe.each(databases)('a write that loses every try at a lock conflict, on %s', (kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => t.close());

  const registerRest = (nickname: string) =>
    t.app.inject({
      method: 'POST',
      url: '/trainer',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(registration(nickname)),
    });
  const registerGraphql = (nickname: string) =>
    gql(t.app, 'mutation($input: RegisterTrainerInput!) { registerTrainer(input: $input) { id } }', { input: registration(nickname) });

  /**
   * What a client is told while every try meets the conflict that `hold` keeps up, and that
   * nothing of those tries was kept: SERVICE_UNAVAILABLE with Retry-After on both transports.
   */
  async function expectBusyAnswers(hold: () => Promise<() => Promise<void>>) {
    const before = await t.app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer');
    const { token } = await createTrainer(t.app, { team: Team.VALOR });
    const release = await hold();
    let answers: [Awaited<ReturnType<typeof registerRest>>, Awaited<ReturnType<typeof registerGraphql>>];
    try {
      answers = [await registerRest(unique('Busy')), await registerGraphql(unique('Busy'))];
    } finally {
      await release();
    }
    const [rest, graphql] = answers;
    expect([rest.statusCode, rest.json<{ code: string }>().code, rest.headers['retry-after']]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
    expect(graphql.errors?.[0]?.extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', retryAfter: 1 });
    // Each was tried again before the answer, as GET /metrics counts.
    const counted = await appConflicts(t);
    expect(counted.gaveUp).toBeGreaterThanOrEqual(2);
    expect(counted.retried).toBeGreaterThanOrEqual(2 * 7);
    // Nothing of the tries stayed; once the conflict is over, the same writes go through.
    const after = await t.app.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer');
    expect(Number(after[0].n)).toBe(Number(before[0].n) + 1);
    expect((await registerRest(unique('Free'))).statusCode).toBe(201);
    return token;
  }

  if (kind === 'mysql') {
    it('answers 503 with Retry-After (REST) and SERVICE_UNAVAILABLE with retryAfter (GraphQL) when a registration deadlocks on every try', async () => {
      // A real deadlock on each try: a second connection holds the row of VALOR's count that the
      // registration's transaction updates last, and then asks for the trainer row that
      // transaction has just inserted. It has written many rows, so the database picks the
      // registration as the deadlock's victim, every time.
      const url = t.config.database.type === 'mysql' ? t.config.database.url : '';
      await t.app.dataSource.query('CREATE TABLE lock_weight (i INT PRIMARY KEY) ENGINE=InnoDB');
      const blocker = await createConnection({ uri: url, multipleStatements: true });
      const errors: unknown[] = [];
      await expectBusyAnswers(async () => {
        await blocker.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
        await blocker.query('START TRANSACTION');
        await blocker.query(`INSERT INTO lock_weight (i) VALUES ${Array.from({ length: 2000 }, (_, i) => `(${i})`).join(', ')}`);
        const [[{ top }]] = await blocker.query<({ top: number } & import('mysql2').RowDataPacket)[]>('SELECT MAX(id) AS top FROM trainer');
        await blocker.query("SELECT n FROM trainer_count WHERE team = 'VALOR' FOR UPDATE");
        let holding = true;
        const trap = (async () => {
          while (holding) {
            // Waits for a registration's uncommitted trainer row: the deadlock.
            await blocker.query('SELECT id FROM trainer WHERE id > ? FOR UPDATE', [top]).catch((error: unknown) => errors.push(error));
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
        })();
        return async () => {
          holding = false;
          await trap;
          await blocker.query('ROLLBACK');
          await blocker.end();
        };
      });
      expect(errors).toEqual([]);
      await t.app.dataSource.query('DROP TABLE lock_weight');
    });
  } else {
    it('answers 503 with Retry-After (REST) and SERVICE_UNAVAILABLE with retryAfter (GraphQL) while another connection holds the file, for transactions and single writes', async () => {
      // Another connection to the same file (as `npm run reconcile` has, from its own process) holding the write lock.
      const other = createDataSource(t.config.database);
      await other.initialize();
      const runner = other.createQueryRunner();
      const hold = async () => {
        await runner.query('BEGIN IMMEDIATE');
        return async () => {
          await runner.query('ROLLBACK');
        };
      };
      try {
        const token = await expectBusyAnswers(hold);
        // A single statement (a logout's DELETE) as well.
        const release = await hold();
        const logout = await t.app
          .inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${token}` } })
          .finally(release);
        expect([logout.statusCode, logout.json<{ code: string }>().code, logout.headers['retry-after']]).toEqual([
          503,
          'SERVICE_UNAVAILABLE',
          '1',
        ]);
        expect(
          (await t.app.inject({ method: 'POST', url: '/trainer/logout', headers: { authorization: `Bearer ${token}` } })).statusCode,
        ).toBe(204);
      } finally {
        await runner.release();
        await other.destroy();
      }
    });
  }
});
