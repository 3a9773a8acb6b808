import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Pool, PoolConnection } from 'mysql2';
import { MysqlDriver } from 'typeorm/driver/mysql/MysqlDriver';
import { buildApp } from '../../src/app';
import { PasswordHasher } from '../../src/auth/password';
import { createTestDatabase, databases, runReconcile, startTestApp, testConfig, type TestApp } from '../helpers/app';
import { graphqlDriver, restDriver, type Driver, type Outcome } from '../helpers/drivers';
import { TEST_PASSWORD, unique } from '../helpers/factories';
import { gql } from '../helpers/graphql';

/*
 * Ids are 64-bit (BIGINT on MySQL/MariaDB, SQLite's own row id): trainers and creatures with ids
 * far above 2^31 - 1, written by plain SQL in any order, or handed out several apart by MySQL
 * (auto_increment_increment), are read, listed, signed in and changed like any other. The API
 * takes and shows ids up to 2^53 - 1: decimal strings in GraphQL, JSON numbers in REST.
 */

function value<T>(result: Outcome<T>): T {
  if (!result.ok) throw new Error(`expected success, got ${result.status} ${result.code} ${JSON.stringify(result.fields ?? [])}`);
  return result.value;
}

/** Every trainer id of the list, one page of `limit` after another, following nextCursor. */
async function walk(driver: Driver, token: string, limit: number): Promise<number[]> {
  const ids: number[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < 100; pages += 1) {
    const page = value(await driver.listTrainers(token, { limit, ...(after === undefined ? {} : { after }) }));
    ids.push(...page.items.map((trainer) => trainer.id));
    if (!page.nextCursor) return ids;
    after = page.nextCursor;
  }
  throw new Error('the list did not end');
}

/** Every trainer id of the REST list, following the Link header (rel="next") from GET /trainer?limit=. */
async function walkLinks(app: FastifyInstance, token: string, limit: number): Promise<number[]> {
  const ids: number[] = [];
  let url: string | undefined = `/trainer?limit=${limit}`;
  for (let pages = 0; url !== undefined && pages < 100; pages += 1) {
    const res: LightMyRequestResponse = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    ids.push(...res.json<{ items: { id: number }[] }>().items.map((trainer) => trainer.id));
    const link: unknown = res.headers.link;
    url = typeof link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
  }
  expect(url).toBeUndefined();
  return ids;
}

const sqlIds = async (app: FastifyInstance, table: 'trainer' | 'creature'): Promise<number[]> =>
  (await app.dataSource.query<{ id: number | string }[]>(`SELECT id FROM ${table} ORDER BY id`)).map((row) => Number(row.id));

const registration = (transport: string) => {
  const nickname = unique(`big_${transport}_`);
  return { nickname, firstName: 'Big', lastName: 'Id', email: `${nickname}@example.test`, password: TEST_PASSWORD, team: 'MYSTIC' };
};

describe.each(databases)('ids far above 2^31 - 1 on %s', (kind) => {
  const FIRST = 5_000_000_000;
  const SECOND = 4_000_000_001;
  const THIRD = 2 ** 40;
  const CREATURE = 6_000_000_000;
  let t: TestApp;
  let hash: string;
  let me: { id: number; token: string };
  beforeAll(async () => {
    t = await startTestApp(kind);
    hash = await new PasswordHasher().hash(TEST_PASSWORD);
    const input = registration('me');
    const made = value(await restDriver(t.app).register(input));
    me = { id: made.id, token: value(await restDriver(t.app).authenticate(input.email, TEST_PASSWORD)).token };
  });
  afterAll(async () => t.close());

  const insertTrainer = (id: number, nickname: string) =>
    t.app.dataSource.query(
      "INSERT INTO trainer (id, nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, 'Big', 'Id', ?, ?, 'VALOR', '2026-01-01 00:00:00.000')",
      [id, nickname, nickname.toLowerCase(), `${nickname.toLowerCase()}@example.test`, hash],
    );

  it('reads, lists (each trainer once, in id order), signs in and changes the creatures of trainers written by plain SQL', async () => {
    const names = new Map<number, string>();
    // Out of id order, as an import may write them.
    for (const id of [FIRST, SECOND, THIRD]) {
      names.set(id, unique('big_'));
      await insertTrainer(id, names.get(id)!);
    }
    await t.app.dataSource.query(
      "INSERT INTO creature (id, name, name_key, species_id, level, trainer_id, created_at) VALUES (?, 'Old', 'old', 1, 1, ?, '2026-01-01 00:00:00.000')",
      [CREATURE, FIRST],
    );
    // As an import ends: counts, search suffixes and creature counts made exact.
    await runReconcile(t.config.database);
    const everyone = await sqlIds(t.app, 'trainer');
    expect(everyone).toEqual([me.id, SECOND, FIRST, THIRD]);

    // Lists: every trainer exactly once, in id order, on both transports, by cursor and by Link header.
    for (const limit of [1, 2, 20]) {
      expect(await walk(restDriver(t.app), me.token, limit)).toEqual(everyone);
      expect(await walk(graphqlDriver(t.app), me.token, limit)).toEqual(everyone);
      expect(await walkLinks(t.app, me.token, limit)).toEqual(everyone);
    }
    const page = value(await restDriver(t.app).listTrainers(me.token, { limit: 2, offset: 2 }));
    expect([page.items.map((trainer) => trainer.id), page.totalCount]).toEqual([[FIRST, THIRD], 4]);

    for (const driver of [restDriver(t.app), graphqlDriver(t.app)]) {
      for (const id of [FIRST, SECOND, THIRD]) {
        // Read by anyone, and signed in with its password: the token works, and shows it its own email.
        expect(value(await driver.getTrainer(me.token, String(id)))).toMatchObject({ id, nickname: names.get(id), email: null });
        const signedIn = value(await driver.authenticate(`${names.get(id)!.toLowerCase()}@example.test`, TEST_PASSWORD));
        expect(signedIn.trainer.id).toBe(id);
        expect(value(await driver.getTrainer(signedIn.token, String(id))).email).toBe(`${names.get(id)!.toLowerCase()}@example.test`);
      }
      // Creatures: the one written by plain SQL, and new ones, whose ids follow it.
      const owner = value(await driver.authenticate(`${names.get(FIRST)!.toLowerCase()}@example.test`, TEST_PASSWORD)).token;
      expect(value(await driver.getCreature(owner, String(FIRST), String(CREATURE)))).toMatchObject({ id: CREATURE, trainerId: FIRST });
      const made = value(await driver.createCreature(owner, String(FIRST), { name: unique('Big'), speciesId: 7 }));
      expect(made.id).toBeGreaterThan(CREATURE);
      expect(made.trainerId).toBe(FIRST);
      const listed = value(await driver.listCreatures(owner, String(FIRST), { limit: 10 }));
      expect([listed.items.map((creature) => creature.id), listed.totalCount]).toEqual([[CREATURE, made.id], 2]);
      value(await driver.deleteCreature(owner, String(FIRST), String(made.id)));
      expect(value(await driver.listCreatures(owner, String(FIRST), { limit: 10 })).items.map((creature) => creature.id)).toEqual([
        CREATURE,
      ]);
      // Someone else's token still cannot touch them.
      expect(await driver.deleteCreature(me.token, String(FIRST), String(CREATURE))).toMatchObject({ ok: false });
    }
    const owner = value(await restDriver(t.app).authenticate(`${names.get(FIRST)!.toLowerCase()}@example.test`, TEST_PASSWORD)).token;
    value(await restDriver(t.app).deleteCreature(owner, String(FIRST), String(CREATURE)));
    expect(await sqlIds(t.app, 'creature')).toEqual([]);
  });

  it('shows ids as decimal strings in GraphQL and as JSON numbers in REST', async () => {
    const res = await gql<{ trainer: { id: string } | null }>(t.app, `query { trainer(id: "${THIRD}") { id } }`, {}, me.token);
    expect(res.data?.trainer).toEqual({ id: String(THIRD) });
    const rest = await t.app.inject({ method: 'GET', url: `/trainer/${THIRD}`, headers: { authorization: `Bearer ${me.token}` } });
    expect(rest.body).toContain(`{"id":${THIRD},`);
    const list = await t.app.inject({ method: 'GET', url: '/trainer?limit=100', headers: { authorization: `Bearer ${me.token}` } });
    expect(list.body).toContain(`{"id":${THIRD},`);
  });

  it('takes ids up to 2^53 - 1 and refuses larger ones with BAD_USER_INPUT, on both transports', async () => {
    for (const driver of [restDriver(t.app), graphqlDriver(t.app)]) {
      expect(await driver.getTrainer(me.token, String(Number.MAX_SAFE_INTEGER))).toMatchObject({ ok: false, code: 'NOT_FOUND' });
      expect(await driver.getCreature(me.token, String(THIRD), String(Number.MAX_SAFE_INTEGER))).toMatchObject({
        ok: false,
        code: 'NOT_FOUND',
      });
      for (const id of ['9007199254740992', '10000000000000000', '99999999999999999999']) {
        expect(await driver.getTrainer(me.token, id)).toMatchObject({ ok: false, code: 'BAD_USER_INPUT' });
        expect(await driver.getCreature(me.token, String(THIRD), id)).toMatchObject({ ok: false, code: 'BAD_USER_INPUT' });
      }
    }
  });

  // Pages read the table: a row written by plain SQL anywhere below the highest id shows at once.
  it('lists a trainer written by plain SQL below the highest id already listed', async () => {
    if (!(await sqlIds(t.app, 'trainer')).includes(THIRD)) await insertTrainer(THIRD, unique('big_'));
    await walk(restDriver(t.app), me.token, 20);
    await insertTrainer(4_500_000_000, unique('big_'));
    expect(await walk(restDriver(t.app), me.token, 20)).toEqual(await sqlIds(t.app, 'trainer'));
  });
});

describe.each(databases)('reconciling a database whose trainer ids lie far apart, on %s', (kind) => {
  it('counts the creatures of a trainer at 2^40 by walking the ids that exist, not every id below it', async () => {
    const database = await createTestDatabase(kind);
    try {
      const app = await buildApp(testConfig(database.url));
      try {
        await app.dataSource.query(
          "INSERT INTO trainer (id, nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, 'far', 'far', 'F', 'A', 'far@example.test', 'x', 'VALOR', '2026-01-01 00:00:00.000')",
          [2 ** 40],
        );
        await app.dataSource.query(
          "INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES ('Far', 'far', 1, 1, ?, '2026-01-01 00:00:00.000')",
          [2 ** 40],
        );
        expect(await runReconcile(database.url)).toEqual({ trainers: 1, countsChanged: 1, buckets: 1 });
        const [row] = await app.dataSource.query<{ n: number | string }[]>('SELECT creatures_owned AS n FROM trainer WHERE id = ?', [
          2 ** 40,
        ]);
        expect(Number(row.n)).toBe(1);
      } finally {
        await app.close();
      }
    } finally {
      await database.drop();
    }
  }, 20_000);
});

(databases.includes('mysql') ? describe : describe.skip)('ids handed out 3 apart (auto_increment_increment = 3) on mysql', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp('mysql');
    // A session setting of the app's own connections (the server's global stays as it is): on
    // every connection the pool opens from now on, and on each it may hold already (its poolSize,
    // 10, taken at once).
    const pool = (t.app.dataSource.driver as MysqlDriver).pool as Pool;
    const SET = 'SET SESSION auto_increment_increment = 3';
    pool.on('connection', (connection) => connection.query(SET));
    const held = await Promise.all(
      Array.from(
        { length: 10 },
        () => new Promise<PoolConnection>((resolve, reject) => pool.getConnection((error, got) => (error ? reject(error) : resolve(got)))),
      ),
    );
    for (const connection of held) {
      await new Promise<void>((resolve, reject) => connection.query(SET, (error) => (error ? reject(error) : resolve())));
      connection.release();
    }
  });
  afterAll(async () => t.close());

  const gaps = (ids: readonly number[]) => ids.slice(1).map((id, i) => id - ids[i]);

  it('registers trainers and creates creatures 3 ids apart, and reads, lists, signs in and deletes them', async () => {
    const rest = restDriver(t.app);
    const graphql = graphqlDriver(t.app);
    const trainers: { id: number; token: string }[] = [];
    for (const driver of [rest, graphql, rest, graphql]) {
      const input = registration(driver.name);
      const made = value(await driver.register(input));
      trainers.push({ id: made.id, token: value(await driver.authenticate(input.email, TEST_PASSWORD)).token });
    }
    expect(gaps(trainers.map((trainer) => trainer.id))).toEqual([3, 3, 3]);
    const everyone = await sqlIds(t.app, 'trainer');
    expect(everyone).toEqual(trainers.map((trainer) => trainer.id));

    const [owner] = trainers;
    const creatures: number[] = [];
    for (const driver of [rest, graphql, rest, graphql]) {
      creatures.push(value(await driver.createCreature(owner.token, String(owner.id), { name: unique('Gap'), speciesId: 3 })).id);
    }
    expect(gaps(creatures)).toEqual([3, 3, 3]);

    for (const driver of [rest, graphql]) {
      for (const { id, token } of trainers) expect(value(await driver.getTrainer(token, String(id))).id).toBe(id);
      for (const limit of [1, 3]) expect(await walk(driver, owner.token, limit)).toEqual(everyone);
      for (const id of creatures) expect(value(await driver.getCreature(owner.token, String(owner.id), String(id))).id).toBe(id);
      const page = value(await driver.listCreatures(owner.token, String(owner.id), { limit: 2, offset: 1 }));
      expect(page.items.map((creature) => creature.id)).toEqual(creatures.slice(1, 3));
    }
    expect(await walkLinks(t.app, owner.token, 1)).toEqual(everyone);

    value(await rest.deleteCreature(owner.token, String(owner.id), String(creatures[1])));
    value(await graphql.deleteCreature(owner.token, String(owner.id), String(creatures[2])));
    const left = value(await rest.listCreatures(owner.token, String(owner.id), { limit: 10 }));
    expect([left.items.map((creature) => creature.id), left.totalCount]).toEqual([[creatures[0], creatures[3]], 2]);
  });
});
