import { QUERY_TIMEOUT_MS } from '../../src/db/data-source';
import { Sql } from '../../src/db/sql';
import { Team } from '../../src/trainers/team';
import { TrainerLists } from '../../src/trainers/trainer-lists';
import { TrainerQueries } from '../../src/trainers/trainer.queries';
import { startTestApp, type TestApp } from '../helpers/app';
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
