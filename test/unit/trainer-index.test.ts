import { Team } from '../../src/trainers/team';
import { TrainerIndex } from '../../src/trainers/trainer-index';
import type { IndexRead, IndexRow } from '../../src/trainers/trainer.queries';

/**
 * The rows the index reads, answered as the trainer table answers its statement (`id > afterId
 * OR id IN (holes) ORDER BY id LIMIT n`), over rows committed so far: a commit may come late,
 * after higher ids were read.
 */
class Rows {
  readonly committed: IndexRow[] = [];

  commit(...rows: IndexRow[]): void {
    this.committed.push(...rows);
  }

  read = ({ afterId, ids, limit }: IndexRead): Promise<IndexRow[]> =>
    Promise.resolve(
      this.committed
        .filter((row) => row.id > afterId || ids.includes(row.id))
        .sort((a, b) => a.id - b.id)
        .slice(0, limit),
    );
}

const TEAMS = [Team.VALOR, Team.INSTINCT, Team.MYSTIC];

/** What the index must answer, computed the plain way over the committed rows. */
function expected(rows: readonly IndexRow[], limit: number, offset: number, afterId: number | undefined, filter: Filter) {
  const matching = [...rows]
    .sort((a, b) => a.id - b.id)
    .filter(
      (row) =>
        (filter.nickname === undefined || row.nicknameKey === filter.nickname.toLowerCase()) &&
        (filter.nicknameContains === undefined || row.nicknameKey.includes(filter.nicknameContains.toLowerCase())) &&
        (filter.team === undefined || row.team === filter.team),
    );
  const after = afterId === undefined ? matching : matching.filter((row) => row.id > afterId);
  return { ids: after.slice(offset, offset + limit + 1).map((row) => row.id), count: matching.length };
}

interface Filter {
  nickname?: string;
  nicknameContains?: string;
  team?: Team;
}

describe('TrainerIndex', () => {
  it('answers pages, filters and counts as a walk of the table would, past its first allocations', async () => {
    const rows = new Rows();
    // Keys of varied lengths, some non-ASCII (a plain-SQL import may hold anything), ids with gaps.
    let id = 0;
    const make = (i: number): IndexRow => {
      id += 1 + (i % 7 === 0 ? 3 : 0);
      const stem = ['ab', 'cd', 'abc', 'bca', 'zz', 'ünï', 'x.y-z'][i % 7];
      return { id, nicknameKey: `${stem}_${i.toString(36)}`, team: TEAMS[i % 3] };
    };
    rows.commit(...Array.from({ length: 6000 }, (_, i) => make(i)));
    const index = new TrainerIndex(rows.read);
    await index.sync();
    const filters: Filter[] = [
      {},
      { nicknameContains: 'bc' },
      { nicknameContains: 'B_' },
      // Would only match across two keys ("…_<n>" then "cd…"): never.
      { nicknameContains: `_${(1).toString(36)}cd` },
      { nicknameContains: 'ün' },
      { nickname: 'abc_2' },
      { nickname: 'ABC_2' },
      { nickname: 'abc_' },
      { team: Team.MYSTIC },
      { team: Team.VALOR, nicknameContains: 'zz' },
      { team: Team.INSTINCT, nickname: 'cd_1' },
    ];
    const ids = rows.committed.map((row) => row.id);
    for (const filter of filters) {
      for (const [limit, offset, afterId] of [
        [20, 0, undefined],
        [5, 37, undefined],
        [100, 5990, undefined],
        [20, 0, ids[2999]],
        [3, 2, ids[10] + 1],
        [20, 0, ids.at(-1)],
      ] as const) {
        const want = expected(rows.committed, limit, offset, afterId, filter);
        expect({ filter, limit, offset, afterId, ids: index.pageIds(limit, offset, afterId, filter) }).toEqual({
          filter,
          limit,
          offset,
          afterId,
          ids: want.ids,
        });
        expect(index.count(filter)).toBe(want.count);
      }
    }
  });

  it('places a trainer that committed late, after higher ids were read, among the others', async () => {
    const rows = new Rows();
    rows.commit(
      { id: 1, nicknameKey: 'first', team: Team.VALOR },
      { id: 2, nicknameKey: 'second', team: Team.MYSTIC },
      { id: 5, nicknameKey: 'fifth', team: Team.INSTINCT },
    );
    const index = new TrainerIndex(rows.read);
    await index.sync();
    const version = index.version;
    // 3 and 4 were handed out but had not committed: they commit now, 4 with a long key.
    rows.commit(
      { id: 4, nicknameKey: 'fourth-and-longer-than-the-rest', team: Team.MYSTIC },
      { id: 3, nicknameKey: 'third', team: Team.VALOR },
    );
    await index.sync();
    expect(index.version).toBe(version + 2);
    expect(index.pageIds(10, 0, undefined, {})).toEqual([1, 2, 3, 4, 5]);
    for (const [filter, want] of [
      [{ nickname: 'third' }, [3]],
      [{ nickname: 'fifth' }, [5]],
      [{ nicknameContains: 'th' }, [3, 4, 5]],
      [{ nicknameContains: 'longer' }, [4]],
      [{ nicknameContains: 'restfifth' }, []],
      [{ team: Team.VALOR }, [1, 3]],
      [{ team: Team.MYSTIC, nicknameContains: 'o' }, [2, 4]],
    ] as const) {
      expect({ filter, ids: index.pageIds(10, 0, undefined, filter) }).toEqual({ filter, ids: want });
      expect(index.count(filter)).toBe(want.length);
    }
  });
});
