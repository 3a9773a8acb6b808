import { perTurn } from '../common/per-turn';
import { localChannel, type Channel, type ChannelSpec } from '../common/channel';
import { Team } from './team';
import { MAX_LIMIT } from '../common/args';
import { Trainer as TrainerClass, type Trainer } from './trainer.entity';
import type { TrainerField } from './trainer.columns';
import type { TrainerQueries } from './trainer.queries';

/** The first ids of a list are kept this deep at most (a larger MAX_OFFSET reads deeper pages by a walk of the index). */
const SPAN = 20_000;
/** How long a list's ids are trusted without news of a change (writes by plain SQL, a notice lost while Redis was away). */
const TTL_MS = 1000;

/** A trainer that joined a team (`to`), left one (`from`), or moved from one to another. */
export interface ListChange {
  readonly id: number;
  readonly from?: Team;
  readonly to?: Team;
}

/** The first ids of one list (every team's, or one team's), in order. */
interface Prefix {
  readonly ids: number[];
  /** When the ids were read, on TrainerLists' clock. */
  readonly readAt: number;
  /** The list has no more trainers than `ids` (it was read to its end). */
  readonly complete: boolean;
}

/** A page by offset as the kept ids place it (TrainerLists.pageIds). */
export interface KeptPage {
  readonly ids: number[];
  readonly before: number;
  readonly beyond: number;
}

/** The rows of one page: its list and the first and last id it holds. */
interface RangeRead {
  readonly team: Team | undefined;
  readonly first: number;
  readonly last: number;
  readonly withCounts: boolean;
  /** Only these properties (sorted), or every one when undefined. */
  readonly fields: readonly TrainerField[] | undefined;
}

/** The index of the first of `sorted` (by id) whose id is `id` or more. */
function lowerBound(sorted: readonly Trainer[], id: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle].id < id) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The key of the list of `team` (every team's: ''). */
const listOf = (team: Team | undefined): string => team ?? '';

/**
 * The unfiltered and per-team lists of trainers by offset, and their counts, read so that their
 * cost depends neither on the offset nor on the number of trainers:
 *
 * - Each list keeps the ids of its first MAX_OFFSET + 101 trainers (at most SPAN deep; about
 *   80 KB per list at the default MAX_OFFSET, whatever the number of trainers), read when first
 *   needed by one walk of a narrow index. A page at an offset is then a slice of ids, whose rows
 *   are the list's trainers from its first id to its last (`rows`): one range per page, the pages
 *   of a turn in one statement. No walk of the index per request, one round trip for many.
 * - Every count of a turn of the event loop is one statement (trainer_count, by team).
 *
 * The ids stay right as long as no trainer joined or left the list below them. Every write
 * through the service reports its change (`changed`): the ids from the changed one on are dropped
 * at once in this process and, with REDIS_URL, on every instance within Redis's pub/sub delay, and
 * read again from there when a page needs them. Ids older than TTL_MS are read again, which bounds
 * how long a change that no notice reached (plain SQL, Redis away) can shift a page by offset.
 * Counts and cursor pages never depend on the kept ids.
 */
export class TrainerLists {
  private readonly prefixes = new Map<string, Prefix>();
  private readonly reading = new Map<string, Promise<Prefix>>();
  /** Per list, bumped by every change: a read that a change overtook is not kept. */
  private readonly generations = new Map<string, number>();
  /** How many ids a list keeps: enough for the page of `limit` MAX_LIMIT (and one more) at the deepest offset kept. */
  private readonly depth: number;
  private readonly span: number;

  private readonly rangeReads = perTurn<RangeRead, Trainer[]>((reads) => this.readRanges(reads), 64);

  private readonly countReads = perTurn<string, number>((lists) => this.readCounts(lists));

  constructor(
    private readonly queries: TrainerQueries,
    maxOffset: number,
    /**
     * Milliseconds on a clock that only goes forward (performance.now): a step of the wall clock
     * back would keep stale ids for as long as the step, one forward would drop fresh ones.
     */
    private readonly now: () => number = () => performance.now(),
    /** Changes to and from the other instances (LIST_CHANGES). */
    private readonly changes: Channel<ListChange> = localChannel(),
  ) {
    changes.subscribe((change) => this.deliver(change));
    this.span = Math.min(maxOffset, SPAN);
    this.depth = this.span + MAX_LIMIT + 1;
  }

  /**
   * The ids of up to `limit` trainers of `team` (every team when undefined) after skipping
   * `offset` of them, in id order, and where the page starts when they are read again from the
   * table: after the trainer `before` (the kept id just before the page, 0 when none), skipping
   * `beyond` more (the page lies that far past the end of a list read to its end). Undefined when
   * the page lies deeper than the kept ids (then the caller walks the index).
   */
  async pageIds(team: Team | undefined, offset: number, limit: number): Promise<KeptPage | undefined> {
    if (offset + limit > this.depth) return undefined;
    const { ids } = await this.prefixOf(team, offset + limit);
    const start = Math.min(offset, ids.length);
    return { ids: ids.slice(offset, offset + limit), before: start > 0 ? ids[start - 1] : 0, beyond: offset - start };
  }

  /**
   * The trainers of `team`'s list (every team's when undefined) from `ids[0]` to the last of
   * `ids` (ids of that list in order, as pageIds gives them), with their counts when `withCounts`
   * and only the properties in `fields` (sorted) when given: merged with every other page of the
   * turn that reads the same list and properties into one statement of id ranges.
   */
  rows(team: Team | undefined, ids: readonly number[], withCounts: boolean, fields?: readonly TrainerField[]): Promise<Trainer[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.rangeReads.load({ team, first: ids[0], last: ids[ids.length - 1], withCounts, fields });
  }

  /** How many trainers `team` has (every team when undefined), exact; merged with every count of this turn. */
  count(team: Team | undefined): Promise<number> {
    return this.countReads.load(listOf(team));
  }

  /** A trainer joined, left or changed team through this instance: on every instance from now on. */
  changed(change: ListChange): void {
    this.changes.publish(change);
  }

  /** A change made through this instance or another. */
  private deliver(change: ListChange): void {
    const lists = [change.from, change.to].filter((team) => team !== undefined).map(listOf);
    // A move between teams leaves the list of every team as it was.
    if (change.from === undefined || change.to === undefined) lists.push(listOf(undefined));
    for (const list of lists) {
      this.generations.set(list, (this.generations.get(list) ?? 0) + 1);
      const known = this.prefixes.get(list);
      if (!known) continue;
      // The ids below the changed one keep their positions; from it on, they may have moved.
      const kept = known.ids.findIndex((id) => id >= change.id);
      if (kept !== -1 || known.complete)
        this.prefixes.set(list, { ids: kept === -1 ? known.ids : known.ids.slice(0, kept), readAt: known.readAt, complete: false });
    }
  }

  /** The kept ids of `team`'s list, at least `needed` of them unless the list is shorter: read (again) when stale or short. */
  private async prefixOf(team: Team | undefined, needed: number): Promise<Prefix> {
    const list = listOf(team);
    const known = this.prefixes.get(list);
    const fresh = known !== undefined && this.now() - known.readAt < TTL_MS;
    if (fresh && (known.complete || known.ids.length >= needed)) return known;
    let reading = this.reading.get(list);
    if (!reading) {
      const generation = this.generations.get(list) ?? 0;
      // A fresh prefix cut short by a change is read on from its last id; a stale one from the start.
      const from = fresh ? known.ids : [];
      const readAt = fresh ? known.readAt : this.now();
      const wanted = this.depth - from.length;
      reading = this.queries
        .ids(team, from.length > 0 ? from[from.length - 1] : 0, wanted)
        .then((more) => {
          const prefix = { ids: from.concat(more), readAt, complete: more.length < wanted };
          if ((this.generations.get(list) ?? 0) === generation) this.prefixes.set(list, prefix);
          return prefix;
        })
        .finally(() => this.reading.delete(list));
      this.reading.set(list, reading);
    }
    return reading;
  }

  private async readRanges(reads: readonly RangeRead[]): Promise<Trainer[][]> {
    const groups = new Map<string, number[]>();
    reads.forEach((read, i) => {
      const key = `${listOf(read.team)}:${read.withCounts ? 1 : 0}:${read.fields?.join(',') ?? '*'}`;
      const group = groups.get(key);
      if (group) group.push(i);
      else groups.set(key, [i]);
    });
    const pages: Trainer[][] = reads.map(() => []);
    await Promise.all(
      [...groups.values()].map(async (members) => {
        const { team, withCounts, fields } = reads[members[0]];
        const found = await this.queries.inRanges(
          team,
          members.map((i) => [reads[i].first, reads[i].last] as const),
          withCounts,
          fields,
        );
        found.sort((a, b) => a.id - b.id);
        // Ranges of one statement may overlap: a row in two pages is one object each (requests never share one).
        const taken = new Set<Trainer>();
        for (const i of members) {
          const { first, last } = reads[i];
          let at = lowerBound(found, first);
          for (; at < found.length && found[at].id <= last; at += 1) {
            const trainer = found[at];
            pages[i].push(taken.has(trainer) ? Object.assign(new TrainerClass(), trainer) : trainer);
            taken.add(trainer);
          }
        }
      }),
    );
    return pages;
  }

  private async readCounts(lists: readonly string[]): Promise<number[]> {
    const teams = await this.queries.teamCounts();
    let all = 0;
    for (const n of teams.values()) all += n;
    return lists.map((list) => (list === '' ? all : (teams.get(list as Team) ?? 0)));
  }
}

const optionalTeam = (value: unknown): value is Team | undefined => value === undefined || Object.values<unknown>(Team).includes(value);

/** List changes: one channel that every instance follows from its start. */
export const LIST_CHANGES: ChannelSpec<ListChange> = {
  name: 'registry:trainer-lists-changed',
  field: 'change',
  label: 'list changes',
  decode: (value) => {
    if (typeof value !== 'object' || value === null) return undefined;
    const { id, from, to } = value as Partial<Record<keyof ListChange, unknown>>;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || !optionalTeam(from) || !optionalTeam(to)) return undefined;
    return { id, from, to };
  },
};
