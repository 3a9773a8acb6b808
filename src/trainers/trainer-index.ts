import type { Team } from './team';
import type { TrainerConditions } from './trainer-filter';
import type { IndexRead, IndexRow } from './trainer.queries';

/** Ids missing between two known ones are asked for again this long (an insert may commit late). */
const HOLE_MS = 10_000;
/** Holes watched at once. */
const MAX_HOLES = 10_000;
/** Holes asked for in one catch-up; the rest are asked in the next ones, while they are watched. */
const MAX_HOLES_ASKED = 1000;
/** Rows read per statement while catching up (a new process reads every trainer). */
const CHUNK = 5000;
/** Wider gaps are not holes to watch but ids never used (or trainers removed before we started). */
const MAX_HOLE = 100;

/**
 * Every trainer's id, nickname key and team, in id order, in this process's memory (about 50
 * bytes a trainer), so that a page at any offset, a filter and an exact count cost a walk of
 * arrays instead of a walk of the table. Before each use it catches up with the trainers added
 * since, through any instance (`id > last`, in the same statement as other trainer reads of the
 * moment); ids skipped on the way are asked for again for a while, since concurrent inserts can
 * commit out of id order. Trainers are never changed or removed through the service, so the index
 * stays exact; rows changed by plain SQL (an import) are seen in full after a restart.
 */
export class TrainerIndex {
  private readonly ids: number[] = [];
  private readonly keys: string[] = [];
  private readonly teams: Team[] = [];
  private readonly holes = new Map<number, number>();
  private running: Promise<void> | undefined;
  private changes = 0;
  private queued: Promise<void> | undefined;

  constructor(
    /** Reads the rows of an IndexRead (TrainerService merges it into a statement it makes anyway). */
    private readonly read: (read: IndexRead) => Promise<IndexRow[]>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Changes whenever a trainer is added to the index. */
  get version(): number {
    return this.changes;
  }

  /** Resolves once every trainer committed before the call is in the index. */
  sync(): Promise<void> {
    if (!this.running) {
      this.running = this.catchUp().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    // A catch-up already under way may have started before the caller's own write: one more follows it.
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.sync();
      });
    return this.queued;
  }

  private async catchUp(): Promise<void> {
    const now = this.now();
    for (const [id, since] of this.holes) if (now - since > HOLE_MS) this.holes.delete(id);
    // Bounded, newest first (a registration that commits late left one of the newest holes): ids
    // handed out two by two (auto_increment_increment) would leave a hole per trainer.
    let holes = [...this.holes.keys()].slice(-MAX_HOLES_ASKED);
    // In chunks: 100k rows in one answer held about 20 MB more of memory while they were read.
    for (;;) {
      const last = this.ids.at(-1) ?? 0;
      const rows = await this.read({ afterId: last, ids: holes, limit: CHUNK });
      holes = [];
      let previous = last;
      for (const row of rows) {
        if (row.id <= last) {
          this.insertLate(row);
          continue;
        }
        if (row.id - previous > 1 && row.id - previous <= MAX_HOLE && previous > 0) {
          for (let id = previous + 1; id < row.id; id += 1) this.holes.set(id, now);
          // The oldest go first beyond MAX_HOLES: they are the least likely to commit still.
          while (this.holes.size > MAX_HOLES) this.holes.delete(this.holes.keys().next().value!);
        }
        this.ids.push(row.id);
        this.keys.push(row.nicknameKey);
        this.teams.push(row.team);
        this.changes += 1;
        previous = row.id;
      }
      if (rows.length < CHUNK) return;
    }
  }

  private insertLate(row: IndexRow): void {
    this.holes.delete(row.id);
    const at = this.firstAfter(row.id - 1);
    if (this.ids[at] === row.id) return;
    this.ids.splice(at, 0, row.id);
    this.keys.splice(at, 0, row.nicknameKey);
    this.teams.splice(at, 0, row.team);
    this.changes += 1;
  }

  /** The position of the first id greater than `id`. */
  private firstAfter(id: number): number {
    let low = 0;
    let high = this.ids.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.ids[mid] <= id) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private matcher(conditions: TrainerConditions): ((i: number) => boolean) | null {
    const tests: ((i: number) => boolean)[] = [];
    if (conditions.nickname !== undefined) {
      const key = conditions.nickname.toLowerCase();
      tests.push((i) => this.keys[i] === key);
    }
    if (conditions.nicknameContains !== undefined) {
      const part = conditions.nicknameContains.toLowerCase();
      tests.push((i) => this.keys[i].includes(part));
    }
    if (conditions.team !== undefined) {
      const team = conditions.team;
      tests.push((i) => this.teams[i] === team);
    }
    return tests.length === 0 ? null : (i) => tests.every((test) => test(i));
  }

  /**
   * The ids of a page: `limit` matching trainers after `afterId` (when given) and `offset` more,
   * plus the next one when it exists (it tells whether another page follows).
   */
  pageIds(limit: number, offset: number, afterId: number | undefined, conditions: TrainerConditions): number[] {
    const start = afterId === undefined ? 0 : this.firstAfter(afterId);
    const match = this.matcher(conditions);
    if (!match) return this.ids.slice(start + offset, start + offset + limit + 1);
    const found: number[] = [];
    let skipped = 0;
    for (let i = start; i < this.ids.length && found.length <= limit; i += 1) {
      if (!match(i)) continue;
      if (skipped < offset) skipped += 1;
      else found.push(this.ids[i]);
    }
    return found;
  }

  /** How many trainers match. */
  count(conditions: TrainerConditions): number {
    const match = this.matcher(conditions);
    if (!match) return this.ids.length;
    let n = 0;
    for (let i = 0; i < this.ids.length; i += 1) if (match(i)) n += 1;
    return n;
  }
}
