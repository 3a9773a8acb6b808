import { isNickname } from '../common/rules';
import { Team } from './team';
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

/** Teams as one byte each (0: a team this build does not know, read by plain SQL). */
const TEAM_CODES = new Map<string, number>(Object.values(Team).map((team, i) => [team, i + 1]));

/**
 * Every trainer's id, nickname key and team, in id order, in this process's memory, so that a
 * page at any offset, a filter and an exact count cost a walk of arrays instead of a walk of the
 * table. Before each use it catches up with the trainers added since, through any instance
 * (`id > last`, in the same statement as other trainer reads of the moment); ids skipped on the
 * way are asked for again for a while, since concurrent inserts can commit out of id order.
 * Trainers are never changed or removed through the service, so the index stays exact; rows
 * changed by plain SQL (an import) are seen in full after a restart.
 *
 * Kept in typed arrays, not a string and an array slot per trainer: ids (Float64Array, exact up
 * to 2^53 - 1), teams (a byte each), and the nickname keys' UTF-8 bytes one after another in one
 * Buffer with each one's start. About 24 bytes a trainer instead of about 60, and 100k fewer
 * objects for every full collection to mark; nicknameContains and nickname search the bytes with
 * Buffer.indexOf.
 */
export class TrainerIndex {
  private size = 0;
  private ids = new Float64Array(1024);
  private teams = new Uint8Array(1024);
  /** Where each key starts in `keyBytes`; entry `size` is where the next one will. */
  private keyStarts = new Int32Array(1025);
  private keyBytes = Buffer.alloc(16 * 1024);
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
      const last = this.size > 0 ? this.ids[this.size - 1] : 0;
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
        this.insertAt(this.size, row);
        previous = row.id;
      }
      if (rows.length < CHUNK) return;
    }
  }

  private insertLate(row: IndexRow): void {
    this.holes.delete(row.id);
    const at = this.firstAfter(row.id - 1);
    if (at < this.size && this.ids[at] === row.id) return;
    this.insertAt(at, row);
  }

  /** Adds a trainer at position `at` (the end, but for a late commit), growing the arrays by half as needed. */
  private insertAt(at: number, row: IndexRow): void {
    const key = Buffer.from(row.nicknameKey);
    if (this.size === this.ids.length) {
      const capacity = this.size + (this.size >> 1);
      this.ids = grown(this.ids, capacity);
      this.teams = grown(this.teams, capacity);
      this.keyStarts = grown(this.keyStarts, capacity + 1);
    }
    const used = this.keyStarts[this.size];
    if (used + key.length > this.keyBytes.length) {
      const bytes = Buffer.alloc(Math.max(used + key.length, this.keyBytes.length + (this.keyBytes.length >> 1)));
      this.keyBytes.copy(bytes, 0, 0, used);
      this.keyBytes = bytes;
    }
    const keyAt = this.keyStarts[at];
    if (at < this.size) {
      // A late commit: the trainers after it move up one place, their keys' bytes by its key's length.
      this.ids.copyWithin(at + 1, at, this.size);
      this.teams.copyWithin(at + 1, at, this.size);
      this.keyBytes.copy(this.keyBytes, keyAt + key.length, keyAt, used);
      for (let i = this.size; i >= at; i -= 1) this.keyStarts[i + 1] = this.keyStarts[i] + key.length;
    } else {
      this.keyStarts[at + 1] = used + key.length;
    }
    this.ids[at] = row.id;
    this.teams[at] = TEAM_CODES.get(row.team) ?? 0;
    key.copy(this.keyBytes, keyAt);
    this.size += 1;
    this.changes += 1;
  }

  /** The position of the first id greater than `id`. */
  private firstAfter(id: number): number {
    let low = 0;
    let high = this.size;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.ids[mid] <= id) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** The position of the key whose bytes hold byte `at`. */
  private keyAt(at: number): number {
    let low = 0;
    let high = this.size - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (this.keyStarts[mid] <= at) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  /**
   * The positions whose key equals (`whole`) or contains `text`, ascending, found by searching the
   * keys' bytes: a match may not run from one key into the next.
   */
  private keysWith(text: string, whole: boolean): Int32Array {
    const needle = Buffer.from(text);
    const found: number[] = [];
    if (needle.length === 0) {
      // Every key contains the empty text; only an empty key is it.
      for (let i = 0; i < this.size; i += 1) if (!whole || this.keyStarts[i + 1] === this.keyStarts[i]) found.push(i);
      return Int32Array.from(found);
    }
    const end = this.keyStarts[this.size];
    let at = this.keyBytes.indexOf(needle);
    while (at !== -1 && at < end) {
      const i = this.keyAt(at);
      const next = this.keyStarts[i + 1];
      const within = at + needle.length <= next;
      if (within && (!whole || (at === this.keyStarts[i] && at + needle.length === next))) {
        found.push(i);
        at = next;
      } else {
        at += 1;
      }
      at = at < end ? this.keyBytes.indexOf(needle, at) : -1;
    }
    return Int32Array.from(found);
  }

  /**
   * What a page or count walks: the positions whose keys match (ascending; null when no key
   * condition is given, i.e. every position), and the team to check on each (0: any).
   */
  private matching(conditions: TrainerConditions): { keyed: Int32Array | null; team: number } {
    let keyed: Int32Array | null = null;
    // A nickname outside the nickname rules matches nobody, as in TrainerService.findByNickname
    // (lower-casing could otherwise make one out of `K`, the Kelvin sign, for instance).
    if (conditions.nickname !== undefined) {
      keyed = isNickname(conditions.nickname) ? this.keysWith(conditions.nickname.toLowerCase(), true) : new Int32Array(0);
    }
    if (conditions.nicknameContains !== undefined) {
      const within = this.keysWith(conditions.nicknameContains.toLowerCase(), false);
      keyed = keyed === null ? within : keyed.filter((i) => within.includes(i));
    }
    const team = conditions.team === undefined ? 0 : (TEAM_CODES.get(conditions.team) ?? -1);
    return { keyed, team };
  }

  /**
   * The ids of a page: `limit` matching trainers after `afterId` (when given) and `offset` more,
   * plus the next one when it exists (it tells whether another page follows). A team alone is
   * checked while walking, which stops once the page is full.
   */
  pageIds(limit: number, offset: number, afterId: number | undefined, conditions: TrainerConditions): number[] {
    const start = afterId === undefined ? 0 : this.firstAfter(afterId);
    const { keyed, team } = this.matching(conditions);
    if (keyed === null && team === 0) {
      return Array.from(this.ids.subarray(Math.min(start + offset, this.size), Math.min(start + offset + limit + 1, this.size)));
    }
    // Where the walk starts: `start` itself, or the first key match at or after it.
    let from = start;
    if (keyed !== null) {
      let high = keyed.length;
      from = 0;
      while (from < high) {
        const mid = (from + high) >>> 1;
        if (keyed[mid] < start) from = mid + 1;
        else high = mid;
      }
    }
    const end = keyed === null ? this.size : keyed.length;
    const found: number[] = [];
    let skipped = 0;
    for (let j = from; j < end && found.length <= limit; j += 1) {
      const i = keyed === null ? j : keyed[j];
      if (team !== 0 && this.teams[i] !== team) continue;
      if (skipped < offset) skipped += 1;
      else found.push(this.ids[i]);
    }
    return found;
  }

  /** How many trainers match. */
  count(conditions: TrainerConditions): number {
    const { keyed, team } = this.matching(conditions);
    if (team === 0) return keyed?.length ?? this.size;
    let n = 0;
    if (keyed === null) {
      for (let i = 0; i < this.size; i += 1) if (this.teams[i] === team) n += 1;
    } else {
      for (const i of keyed) if (this.teams[i] === team) n += 1;
    }
    return n;
  }
}

/** A copy of `array` with room for `capacity` elements. */
function grown<T extends Float64Array | Int32Array | Uint8Array>(array: T, capacity: number): T {
  const bigger = new (array.constructor as new (length: number) => T)(capacity);
  bigger.set(array);
  return bigger;
}
