import type { FastifyInstance } from 'fastify';
import { databases, startTestApp, startTestInstances, type TestApp } from '../helpers/app';
import { graphqlDriver, restDriver, type Outcome, type PageView, type TrainerView } from '../helpers/drivers';
import { createTrainer, deleteTrainer, signIn, unique, type TrainerFixture } from '../helpers/factories';
import { redisReachable, REDIS_TEST_URL } from '../helpers/redis';
import { Team } from '../../src/trainers/team';

/*
 * Pages by offset of every trainer and of a team come from the ids each instance keeps of the
 * first MAX_OFFSET trainers of each list: they must answer exactly what the table holds, at once
 * after writes through either instance (the other one hears of them through Redis), and within a
 * second after writes by plain SQL.
 */

function value<T>(result: Outcome<T>): T {
  if (!result.ok) throw new Error(`expected success, got ${result.code}`);
  return result.value;
}

const TRAINERS = 150;

describe.each(databases)('pages by offset across two instances on %s', (kind) => {
  let instances: { apps: FastifyInstance[]; url: string; close(): Promise<void> } | undefined;
  let me: TrainerFixture;
  let reachable = false;
  beforeAll(async () => {
    reachable = await redisReachable('the two-instance page offset test is');
    if (!reachable) return;
    instances = await startTestInstances(kind, 2, { REDIS_URL: REDIS_TEST_URL });
    const [a] = instances.apps;
    me = await createTrainer(a);
    for (let i = 0; i < TRAINERS; i += 1) await createTrainer(a, { team: [Team.VALOR, Team.MYSTIC, Team.INSTINCT][i % 3] });
  }, 60_000);
  afterAll(async () => instances?.close());

  const apps = () => instances!.apps;
  const sqlPage = async (offset: number, limit: number, team?: Team): Promise<number[]> => {
    const rows = await apps()[0].dataSource.query<{ id: number | string }[]>(
      `SELECT id FROM trainer${team ? ' WHERE team = ?' : ''} ORDER BY id LIMIT ${limit} OFFSET ${offset}`,
      team ? [team] : [],
    );
    return rows.map((row) => Number(row.id));
  };
  const restPage = async (app: FastifyInstance, offset: number, limit: number, team?: Team): Promise<number[]> =>
    value(await restDriver(app).listTrainers(me.token, { limit, offset, ...(team ? { filter: { team } } : {}) })).items.map((t) =>
      Number(t.id),
    );
  const graphqlPage = async (app: FastifyInstance, offset: number, limit: number, team?: Team): Promise<number[]> =>
    value(await graphqlDriver(app).listTrainers(me.token, { limit, offset, ...(team ? { filter: { team } } : {}) })).items.map((t) =>
      Number(t.id),
    );
  /** Polls `read` until it equals `expected` or `ms` pass; returns the last answer. */
  const within = async (ms: number, read: () => Promise<number[]>, expected: number[]): Promise<number[]> => {
    const until = Date.now() + ms;
    let got = await read();
    while (JSON.stringify(got) !== JSON.stringify(expected) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      got = await read();
    }
    return got;
  };

  it('answers every offset as the table orders it, every team and each team, on both transports and instances', async () => {
    if (!reachable) return;
    for (const team of [undefined, Team.VALOR]) {
      for (const offset of [0, 1, 63, 64, 65, 100, team ? 45 : 140, 1000]) {
        const expected = await sqlPage(offset, 20, team);
        for (const app of apps()) {
          expect([team, offset, await restPage(app, offset, 20, team)]).toEqual([team, offset, expected]);
          expect([team, offset, await graphqlPage(app, offset, 20, team)]).toEqual([team, offset, expected]);
        }
      }
    }
  });

  it('shifts pages at once after a trainer before them leaves, on the instance that removed it and through Redis on the other', async () => {
    if (!reachable) return;
    const [a, b] = apps();
    for (const app of apps()) await restPage(app, 80, 20);
    for (const app of apps()) await restPage(app, 30, 20, Team.MYSTIC);
    const [leaving] = await sqlPage(10, 1, Team.MYSTIC);
    await deleteTrainer(a, { id: leaving });
    expect(await restPage(a, 80, 20)).toEqual(await sqlPage(80, 20));
    expect(await restPage(a, 30, 20, Team.MYSTIC)).toEqual(await sqlPage(30, 20, Team.MYSTIC));
    // Well within the second after which an instance reads a list's ids again anyway.
    expect(await within(300, () => restPage(b, 80, 20), await sqlPage(80, 20))).toEqual(await sqlPage(80, 20));
    expect(await within(300, () => restPage(b, 30, 20, Team.MYSTIC), await sqlPage(30, 20, Team.MYSTIC))).toEqual(
      await sqlPage(30, 20, Team.MYSTIC),
    );
  });

  it('moves a trainer between team pages at once when it changes team, on both instances', async () => {
    if (!reachable) return;
    const [a, b] = apps();
    for (const app of apps()) {
      for (const team of [Team.MYSTIC, Team.VALOR]) await restPage(app, 20, 20, team);
    }
    const [moving] = await sqlPage(5, 1, Team.MYSTIC);
    const { token } = await signIn(a, moving);
    expect(value(await graphqlDriver(a).updateMe(token, String(moving), { team: 'VALOR' })).team).toBe('VALOR');
    for (const team of [Team.MYSTIC, Team.VALOR]) {
      expect(await restPage(a, 20, 20, team)).toEqual(await sqlPage(20, 20, team));
      expect(await within(300, () => restPage(b, 20, 20, team), await sqlPage(20, 20, team))).toEqual(await sqlPage(20, 20, team));
    }
  });

  it('shows a trainer registered through one instance on the last page by offset of both at once', async () => {
    if (!reachable) return;
    const [a, b] = apps();
    const [{ n }] = await a.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM trainer');
    const last = Number(n) - 5;
    for (const app of apps()) expect(await restPage(app, last, 20)).toEqual(await sqlPage(last, 20));
    const stem = unique('Off').toLowerCase();
    const made = value(
      await graphqlDriver(b).register({
        nickname: stem,
        firstName: 'O',
        lastName: 'F',
        email: `${stem}@example.test`,
        password: 'password-1',
        team: 'VALOR',
      }),
    );
    expect((await restPage(b, last, 20)).at(-1)).toBe(Number(made.id));
    expect(await within(300, () => restPage(a, last, 20), await sqlPage(last, 20))).toEqual(await sqlPage(last, 20));
  });

  it('shows rows removed by plain SQL on the first page at once and on pages by offset within a second', async () => {
    if (!reachable) return;
    const [a] = apps();
    await restPage(a, 70, 20);
    const [gone] = await sqlPage(3, 1);
    await a.dataSource.query('DELETE FROM trainer WHERE id = ?', [gone]);
    expect(await restPage(a, 0, 20)).toEqual(await sqlPage(0, 20));
    expect(await within(2500, () => restPage(a, 70, 20), await sqlPage(70, 20))).toEqual(await sqlPage(70, 20));
  });
});

describe.each(databases)('pages by offset after plain-SQL writes within the age of the kept ids, on %s', (kind) => {
  let t: TestApp;
  let me: TrainerFixture;
  /** The kept ids' clock: held still, so that every read below is within their age until the test moves it. */
  let clock = 0;

  beforeAll(async () => {
    t = await startTestApp(kind, {}, { listClock: () => clock });
    me = await createTrainer(t.app);
    for (let i = 0; i < 180; i += 1) await createTrainer(t.app, { team: [Team.VALOR, Team.MYSTIC, Team.INSTINCT][i % 3] });
  }, 60_000);
  afterAll(async () => t?.close());

  const LIMIT = 20;
  const sqlIds = async (team?: Team): Promise<number[]> => {
    const rows = await t.app.dataSource.query<{ id: number | string }[]>(
      `SELECT id FROM trainer${team ? ' WHERE team = ?' : ''} ORDER BY id`,
      team ? [team] : [],
    );
    return rows.map((row) => Number(row.id));
  };
  /** A page as REST and GraphQL answer it: the ids, nextCursor's presence, and (REST) the Link header's. */
  const pages = async (offset: number, team?: Team) => {
    const query = { limit: LIMIT, offset, ...(team ? { filter: { team } } : {}) };
    const rest = value(await restDriver(t.app).listTrainers(me.token, query)) as PageView<TrainerView> & { link?: string };
    const graphql = value(await graphqlDriver(t.app).listTrainers(me.token, query));
    return {
      rest: { ids: rest.items.map((x) => Number(x.id)), next: rest.nextCursor !== null, link: rest.link !== undefined },
      graphql: { ids: graphql.items.map((x) => Number(x.id)), next: graphql.nextCursor !== null },
    };
  };
  /**
   * What a page by offset may answer while the kept ids are older than a plain-SQL write: the
   * table's page at that offset, or (read from ids kept before the write) the page that starts
   * where the kept ids put it; in either case full while trainers follow, with a next page exactly
   * when one more follows its last.
   */
  const checkPage = async (offset: number, team: Team | undefined, keptBefore: number[]) => {
    const now = await sqlIds(team);
    const exact = now.slice(offset, offset + LIMIT);
    const fromKept =
      offset < keptBefore.length
        ? now.filter((id) => id >= keptBefore[offset]).slice(0, LIMIT)
        : now.filter((id) => id > keptBefore.at(-1)!).slice(offset - keptBefore.length, offset - keptBefore.length + LIMIT);
    const { rest, graphql } = await pages(offset, team);
    for (const page of [rest, graphql]) {
      const label = { team, offset, ids: page.ids, exact, fromKept };
      const matches = [exact, fromKept].some((ids) => JSON.stringify(ids) === JSON.stringify(page.ids));
      const last = page.ids.at(-1) ?? Number.MAX_SAFE_INTEGER;
      expect({ ...label, matches, next: page.next }).toEqual({ ...label, matches: true, next: now.some((id) => id > last) });
    }
    expect(rest.link).toBe(rest.next);
  };

  const OFFSETS = (count: number) => [1, 19, 20, 21, 25, count - LIMIT - 1, count - LIMIT, count - 5, count - 1, count];

  it('answers full pages, with a next page exactly when more follow, after rows are deleted and inserted by plain SQL', async () => {
    for (const team of [Team.VALOR, undefined]) {
      // Fresh ids, read now (the clock moves past their age).
      clock += 10_000;
      const before = await sqlIds(team);
      for (const offset of OFFSETS(before.length)) await pages(offset, team);
      // Gone by plain SQL: one inside the page at offset 20, the one that follows it, and one before it.
      const gone = [before[30], before[40], before[5]];
      await t.app.dataSource.query(`DELETE FROM trainer WHERE id IN (${gone.join(', ')})`);
      for (const offset of OFFSETS(before.length)) await checkPage(offset, team, before);
      // Back by plain SQL with the same ids, and one more after every other.
      const [top] = await t.app.dataSource.query<{ id: number | string }[]>('SELECT MAX(id) AS id FROM trainer');
      for (const id of [...gone, Number(top.id) + 1000]) {
        const name = unique('sql_').toLowerCase();
        await t.app.dataSource.query(
          "INSERT INTO trainer (id, nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, 'S', 'Q', ?, 'x', 'VALOR', '2026-01-01 00:00:00.000')",
          [id, name, name, `${name}@example.test`],
        );
      }
      for (const offset of OFFSETS(before.length)) await checkPage(offset, team, before);
      // Once the ids' age is over, every page is the table's.
      clock += 1000;
      const now = await sqlIds(team);
      for (const offset of OFFSETS(now.length)) {
        const { rest, graphql } = await pages(offset, team);
        const expected = now.slice(offset, offset + LIMIT);
        const next = offset + LIMIT < now.length;
        expect([team, offset, rest]).toEqual([team, offset, { ids: expected, next, link: next }]);
        expect([team, offset, graphql]).toEqual([team, offset, { ids: expected, next }]);
      }
    }
  });
});
