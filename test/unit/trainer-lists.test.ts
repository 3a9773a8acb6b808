import { QUERY_TIMEOUT_MS } from '../../src/db/data-source';
import { Sql } from '../../src/db/sql';
import { Team } from '../../src/trainers/team';
import { localChannel, type Channel } from '../../src/common/channel';
import { LIST_CHANGES, TrainerLists, type ListChange } from '../../src/trainers/trainer-lists';
import { TrainerQueries } from '../../src/trainers/trainer.queries';
import { startTestApp, type TestApp } from '../helpers/app';
import { openTestDatabase, type TestDatabase } from '../helpers/database';
import { createTrainer } from '../helpers/factories';

/*
 * The ids TrainerLists keeps of a list are trusted for a second without news of a change (a
 * plain-SQL write sends none); that second is measured on a clock that only goes forward, so a
 * step of the wall clock (NTP, a VM resumed) neither keeps stale ids longer nor drops fresh ones.
 * The lists read a real SQLite database of their own.
 */
describe('TrainerLists: the age of the kept ids', () => {
  let t: TestApp;
  let queries: TrainerQueries;
  const ids: number[] = [];

  beforeAll(async () => {
    t = await startTestApp('sqlite');
    queries = new TrainerQueries(new Sql(t.app.dataSource, { timeoutMs: QUERY_TIMEOUT_MS, slowMs: 10_000 }));
    for (let i = 0; i < 6; i += 1) ids.push((await createTrainer(t.app, { team: Team.VALOR })).trainer.id);
  });
  afterAll(async () => t?.close());
  afterEach(() => jest.restoreAllMocks());

  /** Removes `id` by plain SQL (no notice reaches the lists) and puts it back when `run` is done. */
  const withoutRow = async (id: number, run: () => Promise<void>) => {
    const [row] = await t.app.dataSource.query<Record<string, unknown>[]>('SELECT * FROM trainer WHERE id = ?', [id]);
    await t.app.dataSource.query('DELETE FROM trainer WHERE id = ?', [id]);
    try {
      await run();
    } finally {
      const columns = Object.keys(row);
      await t.app.dataSource.query(
        `INSERT INTO trainer (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
        columns.map((column) => row[column]),
      );
    }
  };

  it('keeps the ids for a second of the clock it is given, and reads them again after it', async () => {
    let clock = 5_000;
    const lists = new TrainerLists(queries, 100, () => clock);
    expect((await lists.pageIds(Team.VALOR, 0, 10))?.ids).toEqual(ids);
    await withoutRow(ids[2], async () => {
      clock += 999;
      expect((await lists.pageIds(Team.VALOR, 0, 10))?.ids).toEqual(ids);
      clock += 1;
      expect((await lists.pageIds(Team.VALOR, 0, 10))?.ids).toEqual(ids.filter((id) => id !== ids[2]));
    });
  });

  it('by default, reads the ids again a second after it read them, however the wall clock steps', async () => {
    // The wall clock as the process reads it, which the test steps.
    const realNow = Date.now.bind(Date);
    let step = 0;
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + step);
    const lists = new TrainerLists(queries, 100);
    expect((await lists.pageIds(Team.VALOR, 0, 10))?.ids).toEqual(ids);
    await withoutRow(ids[3], async () => {
      // An hour back: a second later, the ids are a second old all the same.
      step = -3_600_000;
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect((await lists.pageIds(Team.VALOR, 0, 10))?.ids).toEqual(ids.filter((id) => id !== ids[3]));
    });
  });
});

/*
 * What TrainerLists keeps of each list and when it reads it again: the ids it read serve the
 * pages by offset until a change reaches the list (a trainer joins, leaves or changes team, told
 * on the list-changes channel by this instance or another), which drops the ids from the
 * changed one on, or until they are a second old on its clock. Pages and counts of one turn are
 * merged into one statement each. The lists read a SQLite file of their own through the app's
 * TrainerQueries, watched (not replaced) to see which statements they make.
 */
describe('TrainerLists: what it keeps, what drops it, what it merges', () => {
  let db: TestDatabase;
  let queries: TrainerQueries;
  let clock: number;
  /** The trainers, in id order, with their teams. */
  let trainers: { id: number; team: Team }[];
  const teams = [Team.VALOR, Team.MYSTIC, Team.VALOR, Team.INSTINCT, Team.VALOR, Team.MYSTIC];
  const ofTeam = (team: Team | undefined) => trainers.filter((trainer) => team === undefined || trainer.team === team).map(({ id }) => id);

  let made = 0;
  const insert = async (team: Team) => {
    made += 1;
    const nickname = `list_${made}`;
    const id = await queries.insert({
      nickname,
      nicknameKey: nickname,
      firstName: 'L',
      lastName: 'T',
      email: `${nickname}@example.test`,
      passwordHash: 'x',
      team,
      createdAt: new Date(),
    });
    trainers.push({ id, team });
    return id;
  };
  const remove = async (id: number) => {
    await queries.deleteAccount(id);
    trainers = trainers.filter((trainer) => trainer.id !== id);
  };

  beforeEach(async () => {
    db = await openTestDatabase();
    queries = new TrainerQueries(db.sql);
    clock = 10_000;
    trainers = [];
    for (const team of teams) await insert(team);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await db?.close();
  });

  /** The lists as an instance makes them (MAX_OFFSET 100: 201 ids kept per list), on the test's clock. */
  const listsOn = (channel?: Channel<ListChange>) => new TrainerLists(queries, 100, () => clock, channel);
  const pageOf = async (lists: TrainerLists, team: Team | undefined, offset = 0, limit = 10) =>
    (await lists.pageIds(team, offset, limit))?.ids;
  /** The walks of the index the lists make from now on: [team, after id, how many]. */
  const watchWalks = () => jest.spyOn(queries, 'ids');

  it('serves the pages by offset from the ids it read once, and places a page beyond the end after the last one', async () => {
    const lists = listsOn();
    const walks = watchWalks();
    const all = ofTeam(undefined);
    expect(await lists.pageIds(undefined, 0, 3)).toEqual({ ids: all.slice(0, 3), before: 0, beyond: 0 });
    expect(await lists.pageIds(undefined, 3, 3)).toEqual({ ids: all.slice(3, 6), before: all[2], beyond: 0 });
    expect(await lists.pageIds(undefined, 8, 2)).toEqual({ ids: [], before: all[5], beyond: 2 });
    expect(await pageOf(lists, Team.VALOR, 1, 5)).toEqual(ofTeam(Team.VALOR).slice(1));
    expect(walks.mock.calls).toEqual([
      [undefined, 0, 201],
      [Team.VALOR, 0, 201],
    ]);
  });

  it('leaves a page deeper than the ids it keeps to a walk of the index, without a statement', async () => {
    const lists = new TrainerLists(queries, 10, () => clock);
    const walks = watchWalks();
    // 10 + MAX_LIMIT + 1 ids kept.
    expect(await lists.pageIds(undefined, 100, 12)).toBeUndefined();
    expect(await lists.pageIds(Team.VALOR, 112, 1)).toBeUndefined();
    expect(walks).not.toHaveBeenCalled();
    expect(await pageOf(lists, undefined, 10, 101)).toEqual([]);
    expect(walks).toHaveBeenCalledTimes(1);
  });

  it('drops the ids from a trainer that left on, and reads on from the last one before it', async () => {
    const lists = listsOn();
    for (const team of [undefined, Team.VALOR, Team.MYSTIC]) expect(await pageOf(lists, team)).toEqual(ofTeam(team));
    const walks = watchWalks();
    const [first, second, gone] = ofTeam(undefined);
    await remove(gone);
    lists.changed({ id: gone, from: Team.VALOR });
    expect(await pageOf(lists, undefined)).toEqual(ofTeam(undefined));
    expect(await pageOf(lists, Team.VALOR)).toEqual(ofTeam(Team.VALOR));
    // MYSTIC's list was not changed: its ids are still kept.
    expect(await pageOf(lists, Team.MYSTIC)).toEqual(ofTeam(Team.MYSTIC));
    expect(walks.mock.calls).toEqual([
      [undefined, second, 199],
      [Team.VALOR, first, 200],
    ]);
  });

  it('shows a trainer that joined at once, read on from the end of a list read to its end', async () => {
    const lists = listsOn();
    expect(await pageOf(lists, Team.INSTINCT)).toEqual(ofTeam(Team.INSTINCT));
    const walks = watchWalks();
    const id = await insert(Team.INSTINCT);
    lists.changed({ id, to: Team.INSTINCT });
    expect(await pageOf(lists, Team.INSTINCT)).toEqual(ofTeam(Team.INSTINCT));
    expect(walks.mock.calls).toEqual([[Team.INSTINCT, ofTeam(Team.INSTINCT)[0], 200]]);
  });

  it('a move between teams reaches the two teams’ lists, not the list of every trainer', async () => {
    const lists = listsOn();
    for (const team of [undefined, ...Object.values(Team)]) await pageOf(lists, team);
    const walks = watchWalks();
    const moved = ofTeam(Team.VALOR)[1];
    await queries.updateProfile(moved, { team: Team.INSTINCT });
    trainers.find((trainer) => trainer.id === moved)!.team = Team.INSTINCT;
    lists.changed({ id: moved, from: Team.VALOR, to: Team.INSTINCT });
    for (const team of [undefined, ...Object.values(Team)]) expect(await pageOf(lists, team)).toEqual(ofTeam(team));
    expect(walks.mock.calls.map(([team]) => team ?? 'every team').sort()).toEqual([Team.INSTINCT, Team.VALOR]);
  });

  it('drops the ids of another instance’s lists when it is told of a change there (the list-changes channel)', async () => {
    const channel = localChannel<ListChange>();
    const here = listsOn(channel);
    const there = listsOn(channel);
    expect(await pageOf(there, Team.MYSTIC)).toEqual(ofTeam(Team.MYSTIC));
    const id = await insert(Team.MYSTIC);
    here.changed({ id, to: Team.MYSTIC });
    const page = await pageOf(there, Team.MYSTIC);
    expect(page).toContain(id);
    expect(page).toEqual(ofTeam(Team.MYSTIC));
  });

  it('reads only well-formed changes from other instances', () => {
    expect(LIST_CHANGES.decode({ id: 5, from: Team.VALOR, to: Team.MYSTIC })).toEqual({ id: 5, from: Team.VALOR, to: Team.MYSTIC });
    expect(LIST_CHANGES.decode({ id: 5 })).toEqual({ id: 5, from: undefined, to: undefined });
    for (const wrong of [null, 5, 'x', { id: '5' }, { id: 2 ** 53 }, { id: 1.5 }, { id: 5, to: 'BLUE' }, { id: 5, from: 1 }])
      expect(LIST_CHANGES.decode(wrong)).toBeUndefined();
  });

  it('does not keep a read that a change overtook: the next page reads again', async () => {
    const lists = listsOn();
    const walks = watchWalks();
    const reading = pageOf(lists, Team.VALOR);
    // Told while the read is under way: it may have missed the change.
    lists.changed({ id: 1, to: Team.VALOR });
    expect(await reading).toEqual(ofTeam(Team.VALOR));
    expect(await pageOf(lists, Team.VALOR)).toEqual(ofTeam(Team.VALOR));
    expect(walks).toHaveBeenCalledTimes(2);
    expect(await pageOf(lists, Team.VALOR)).toEqual(ofTeam(Team.VALOR));
    expect(walks).toHaveBeenCalledTimes(2);
  });

  it('reads a list anew a second after it read it, even when a change made it read on since', async () => {
    const lists = listsOn();
    const walks = watchWalks();
    await pageOf(lists, undefined);
    clock += 500;
    const [, second, third] = ofTeam(undefined);
    lists.changed({ id: third, to: Team.VALOR });
    await pageOf(lists, undefined);
    clock += 499;
    await pageOf(lists, undefined);
    clock += 1;
    await pageOf(lists, undefined);
    expect(walks.mock.calls).toEqual([
      [undefined, 0, 201],
      [undefined, second, 199],
      [undefined, 0, 201],
    ]);
  });

  it('reads the pages of a turn in one statement per list, a trainer in two pages as two objects', async () => {
    const lists = listsOn();
    const all = ofTeam(undefined);
    const valor = ofTeam(Team.VALOR);
    const ranges = jest.spyOn(queries, 'inRanges');
    const [one, two, three] = await Promise.all([
      lists.rows(undefined, all.slice(0, 3), true),
      lists.rows(undefined, all.slice(2, 5), true),
      lists.rows(Team.VALOR, valor.slice(1), true),
    ]);
    expect(one.map((trainer) => trainer.id)).toEqual(all.slice(0, 3));
    expect(two.map((trainer) => trainer.id)).toEqual(all.slice(2, 5));
    expect(three.map((trainer) => trainer.id)).toEqual(valor.slice(1));
    expect(one[2]).toEqual(two[0]);
    expect(one[2]).not.toBe(two[0]);
    expect(one[0].creaturesOwned).toBe(0);
    expect(ranges.mock.calls).toEqual([
      [
        undefined,
        [
          [all[0], all[2]],
          [all[2], all[4]],
        ],
        true,
      ],
      [Team.VALOR, [[valor[1], valor[valor.length - 1]]], true],
    ]);
    expect(await lists.rows(undefined, [], false)).toEqual([]);
    expect(ranges).toHaveBeenCalledTimes(2);
  });

  it('counts every list of a turn in one statement', async () => {
    const lists = listsOn();
    const counts = jest.spyOn(queries, 'teamCounts');
    expect(await Promise.all([lists.count(undefined), lists.count(Team.VALOR), lists.count(Team.INSTINCT)])).toEqual([6, 3, 1]);
    expect(counts).toHaveBeenCalledTimes(1);
    await remove(ofTeam(Team.INSTINCT)[0]);
    expect(await lists.count(Team.INSTINCT)).toBe(0);
    expect(counts).toHaveBeenCalledTimes(2);
  });
});
