import DataLoader from 'dataloader';
import type { LoginThrottle } from '../auth/login-throttle';
import type { PasswordHasher } from '../auth/password';
import { isNickname } from '../common/rules';
import { normalizeEmail, normalizeText } from '../common/text';
import { checkOffset, type Page } from '../common/args';
import type { CursorCodec } from '../common/cursor';
import type { TrainerConditions } from './trainer-filter';
import { TrainerIndex } from './trainer-index';
import { uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import type { Team } from './team';
import { Trainer as TrainerClass, type Trainer } from './trainer.entity';
import {
  trainerFromJson,
  type IndexRead,
  type IndexRow,
  type TrainerField,
  type TrainerJson,
  type TrainerQueries,
  type TrainersById,
} from './trainer.queries';

export interface NewTrainer {
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly password: string;
  readonly team: Team;
}

/**
 * A trainer as a reader sees it: plain properties with its creature count, and its email only if
 * the reader is that trainer (absent otherwise). The REST shim sends it as it is.
 */
export interface TrainerProfile {
  readonly id: number;
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email?: string;
  readonly team: Team;
  readonly creaturesOwned: number;
  readonly createdAt: Date;
}

/** The profile of `trainer` for `viewerId` (see TrainerProfile): one object, made once per trainer a list shows. */
export function profileOf(trainer: Trainer, viewerId: number | undefined): TrainerProfile {
  return {
    id: trainer.id,
    nickname: trainer.nickname,
    firstName: trainer.firstName,
    lastName: trainer.lastName,
    email: visibleEmail(trainer, viewerId) ?? undefined,
    team: trainer.team,
    creaturesOwned: trainer.creaturesOwned ?? 0,
    createdAt: trainer.createdAt,
  };
}

const alreadyExists = (field: 'email' | 'nickname'): AppError =>
  field === 'email'
    ? new AppError('TRAINER_ALREADY_EXISTS', 'A trainer with this email is already registered', [
        { field: 'email', message: 'is already registered' },
      ])
    : new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [{ field: 'nickname', message: 'is already taken' }]);

/** The privacy rule for emails: a trainer's email is shown to that trainer only. */
export const visibleEmail = (trainer: Trainer, viewerId: number | undefined): string | null =>
  trainer.id === viewerId ? trainer.email : null;

/** Pages of up to this many trainers are read through the merged reads (see pageTrainers). */
const MAX_MERGED_PAGE = 25;

/**
 * What the merged reads (TrainerService.reads) are asked: one trainer (with its count or not; when
 * `session` is set, the caller check: null unless that is an open session of the trainer), the
 * trainers of a page (ascending ids, consecutive in the index: read as one id range where they
 * are dense), the same as the JSON text of a REST page as `viewer` sees it (see
 * TrainerQueries.asJson: a second statement of the turn, or the only one when the turn holds
 * nothing but REST pages and caller checks), or TrainerIndex's catch-up.
 */
type TrainerRead =
  | { readonly id: number; readonly count: boolean; readonly session?: number }
  | { readonly page: readonly number[]; readonly count: boolean }
  | { readonly json: readonly number[]; readonly viewer: number }
  | { readonly index: IndexRead };

type ReadResult = Trainer | null | (Trainer | null)[] | (string | null)[] | IndexRow[];

/** A page's ids (ascending) added to `ids`, or to `ranges` as one id range where they are dense (a filtered page's may lie far apart). */
function addPage(page: readonly number[], ids: Set<number>, ranges: [number, number][]): void {
  const first = page[0];
  const last = page[page.length - 1];
  if (last - first < 2 * page.length) ranges.push([first, last]);
  else for (const id of page) ids.add(id);
}

/** The JSON text of a trainer as `viewer` sees it (its own email only), or null when it was not found. */
const jsonFor = (found: Map<number, TrainerJson>, id: number, viewer: number): string | null => {
  const trainer = found.get(id);
  if (!trainer) return null;
  return id === viewer && trainer.own !== null ? trainer.own : trainer.json;
};

export class TrainerService {
  /**
   * Single-trainer reads of every request in flight, merged into one statement per turn of the
   * event loop (the callers, the trainers they read, and the counts some of them want). Under
   * load, many requests arrive in one turn; each then shares a round trip instead of paying its
   * own (the driver's write, its packet parsing, the database's per-statement work). Nothing is
   * cached across requests: every read still goes to the database.
   */
  private readonly reads = new DataLoader<TrainerRead, ReadResult>((keys) => this.readBatch(keys), {
    cache: false,
    batchScheduleFn: (run) => setImmediate(run),
    // Bounds one statement: at most 200 id ranges ORed (SQLite refuses an OR chain 1,000 deep)
    // and 5,000 ids; a request's own reads are bounded by the GraphQL cost limit.
    maxBatchSize: 200,
  });

  private readonly index: TrainerIndex;

  constructor(
    private readonly queries: TrainerQueries,
    private readonly hasher: PasswordHasher,
    private readonly throttle: LoginThrottle,
    private readonly cursors: CursorCodec,
    /** MAX_OFFSET: pages further on are refused (checkOffset); cursors reach them. */
    private readonly maxOffset: number,
  ) {
    // The index catches up in this turn's statement of trainer reads: no round trip of its own.
    this.index = new TrainerIndex((read) => this.reads.load({ index: read }) as Promise<IndexRow[]>);
  }

  /**
   * Counts a registration attempt against the client's address (RATE_LIMITED over
   * REGISTER_IP_PER_HOUR). Both transports call it before they validate the input, so that
   * attempts count whether they succeed or not.
   */
  countRegistration(clientIp: string): Promise<void> {
    return this.throttle.registering(clientIp);
  }

  /**
   * Creates the account. Cost follows work: a taken email or nickname is refused before any
   * password is hashed. The unique indexes still decide, so concurrent registrations cannot both
   * win.
   */
  async register(input: NewTrainer): Promise<Trainer> {
    const email = normalizeEmail(input.email);
    const nicknameKey = input.nickname.toLowerCase();
    const taken = await this.queries.taken(email, nicknameKey);
    if (taken) throw alreadyExists(taken);
    const row = {
      nickname: input.nickname,
      nicknameKey,
      firstName: normalizeText(input.firstName),
      lastName: normalizeText(input.lastName),
      email,
      passwordHash: await this.hasher.hash(input.password),
      team: input.team,
      createdAt: new Date(),
    };
    let id: number;
    try {
      id = await this.queries.insert(row);
    } catch (error) {
      const violated = uniqueViolation(error);
      if (violated === undefined) throw error;
      throw alreadyExists(violated === 'email' ? 'email' : 'nickname');
    }
    const { nickname, firstName, lastName, team, createdAt } = row;
    return Object.assign(new TrainerClass(), { id, nickname, firstName, lastName, email, team, createdAt });
  }

  /**
   * A trainer by id, with `creaturesOwned` read in the same statement when `withCount`. Merged
   * with every other trainer read of this turn, this request's and others' (see `reads`).
   */
  findById(id: number, { withCount = false } = {}): Promise<Trainer | null> {
    return this.reads.load({ id, count: withCount }) as Promise<Trainer | null>;
  }

  /**
   * The calling trainer of an access token, or null when it no longer exists or the token's
   * session has ended (logout, replay, expiry). Merged like findById: the session check rides on
   * the statement that reads the caller, so it costs no round trip of its own.
   */
  findCaller(id: number, sessionId: number): Promise<Trainer | null> {
    return this.reads.load({ id, count: false, session: sessionId }) as Promise<Trainer | null>;
  }

  /** Trainers by id, in no particular order (those that exist), merged like findById. */
  async findByIds(ids: readonly number[]): Promise<Trainer[]> {
    const found = await Promise.all(ids.map((id) => this.findById(id)));
    return found.filter((trainer): trainer is Trainer => trainer !== null);
  }

  private async readBatch(keys: readonly TrainerRead[]): Promise<ReadResult[]> {
    const ids = new Set<number>();
    const callers = new Set<number>();
    const ranges: [number, number][] = [];
    const jsonIds = new Set<number>();
    const jsonRanges: [number, number][] = [];
    const viewers = new Set<number>();
    let withCounts = false;
    // One catch-up at a time per index, so at most one per batch; the others (should there be) are read alone.
    const index = keys.find((key) => 'index' in key);
    for (const key of keys) {
      if ('index' in key) continue;
      if ('json' in key) {
        addPage(key.json, jsonIds, jsonRanges);
        viewers.add(key.viewer);
      } else if ('page' in key) {
        addPage(key.page, ids, ranges);
        withCounts ||= key.count;
      } else {
        ids.add(key.id);
        if (key.session !== undefined) callers.add(key.id);
        withCounts ||= key.count;
      }
    }
    // A turn of REST pages and their callers only (the REST lists' load): one statement, the pages
    // as JSON text with the caller check and the index's `pending` (see TrainerQueries.asJson).
    const pagesAndCallers =
      viewers.size > 0 && keys.every((key) => 'json' in key || 'index' in key || ('id' in key && key.session !== undefined && !key.count));
    // Counts are a column: read for all when any read asks (only those that asked keep theirs, below).
    const [found, foundJson] = pagesAndCallers
      ? await this.readPagesAndCallers(jsonIds, jsonRanges, viewers, callers, index?.index)
      : await Promise.all([
          ids.size === 0 && ranges.length === 0
            ? { trainers: new Map<number, Trainer>(), liveSessions: new Map<number, readonly number[]>(), indexRows: undefined }
            : this.queries.byIds([...ids], withCounts, [...callers], { ranges, index: index?.index }),
          viewers.size === 0
            ? new Map<number, TrainerJson>()
            : this.queries.asJson([...jsonIds], jsonRanges, [...viewers]).then((read) => read.json),
        ]);
    // The catch-up's rows, when the merged read found there are some (trainers are added
    // rarely), and any other catch-up (never seen: one runs at a time), are read on their own.
    const otherIndexReads = new Map<TrainerRead, IndexRow[]>();
    for (const key of keys)
      if ('index' in key && (key !== index || !found.indexRows)) otherIndexReads.set(key, await this.queries.indexRows(key.index));
    // A trainer object per read: requests never share one (the last read of an id takes the
    // object its row became, earlier ones a copy made before it changes), and only those that
    // asked get the count.
    const reads = new Map<number, number>();
    for (const key of keys) {
      if ('id' in key) reads.set(key.id, (reads.get(key.id) ?? 0) + 1);
      else if ('page' in key) for (const id of key.page) reads.set(id, (reads.get(id) ?? 0) + 1);
    }
    const take = (id: number, count: boolean): Trainer | null => {
      const row = found.trainers.get(id);
      if (!row) return null;
      const left = reads.get(id)! - 1;
      reads.set(id, left);
      const trainer = left === 0 ? row : Object.assign(new TrainerClass(), row);
      if (!count) delete trainer.creaturesOwned;
      return trainer;
    };
    return keys.map((key) => {
      if ('index' in key) return otherIndexReads.get(key) ?? found.indexRows!;
      if ('json' in key) return key.json.map((id) => jsonFor(foundJson, id, key.viewer));
      if ('page' in key) return key.page.map((id) => take(id, key.count));
      const trainer = take(key.id, key.count);
      if (trainer && key.session !== undefined && !found.liveSessions.get(key.id)?.includes(key.session)) return null;
      return trainer;
    });
  }

  /**
   * REST pages and the caller check in one statement: the callers are read as JSON too (as they
   * see themselves) and made Trainers from it. A list costs the turn no statement of its own for
   * its caller: GET /trainer went from 0.17 statements per request to 0.09 (see bench/README).
   */
  private async readPagesAndCallers(
    pageIds: Set<number>,
    ranges: [number, number][],
    viewers: Set<number>,
    callers: Set<number>,
    index: IndexRead | undefined,
  ): Promise<[TrainersById, Map<number, TrainerJson>]> {
    const read = await this.queries.asJson([...new Set([...pageIds, ...callers])], ranges, [...new Set([...viewers, ...callers])], {
      callers: [...callers],
      index,
    });
    const trainers = new Map<number, Trainer>();
    for (const id of callers) {
      const own = read.json.get(id)?.own;
      if (own) trainers.set(id, trainerFromJson(own));
    }
    return [{ trainers, liveSessions: read.liveSessions, indexRows: read.indexRows }, read.json];
  }

  /** The id and password hash for an email, for authentication only. */
  credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    return this.queries.credentials(normalizeEmail(email));
  }

  /**
   * A page by id of the trainers matching `filter`, with each trainer's `creaturesOwned` from the
   * same statement when `withCounts` (see TrainerQueries.page). `after` (a nextCursor) starts the
   * page after that trainer; then `offset` must be 0. `nextCursor` is null exactly when no
   * matching trainer follows the page.
   */
  async page(
    limit: number,
    offset: number,
    { withCounts = false, after, filter = {}, alongside, fields }: TrainerPageOptions = {},
  ): Promise<TrainerPageResult> {
    const { items, nextCursor, size } = await this.pageOf(limit, offset, after, filter, async (wanted) => {
      const [trainers] = await Promise.all([this.pageTrainers(wanted, withCounts, fields), alongside?.(wanted)]);
      return trainers;
    });
    const partial = fields !== undefined && size > MAX_MERGED_PAGE;
    return { items, limit, offset, nextCursor, total: () => this.index.count(filter), partial };
  }

  /**
   * The page of `page` and `profilePageJson`, each trainer as `read` gives it (null: not found, left out),
   * its size in the index, and its nextCursor.
   */
  private async pageOf<T>(
    limit: number,
    offset: number,
    after: string | undefined,
    filter: TrainerConditions,
    read: (ids: readonly number[]) => Promise<readonly (T | null)[]>,
  ): Promise<{ items: T[]; nextCursor: string | null; size: number }> {
    if (after !== undefined && offset !== 0) {
      throw new AppError('BAD_USER_INPUT', 'With after, offset must be 0', [{ field: 'offset', message: 'must be 0 when after is given' }]);
    }
    checkOffset(offset, this.maxOffset, 'trainers');
    const afterId = after === undefined ? undefined : this.cursors.decode(after);
    // The page is read as the index has it now, in the same round trip as the index's catch-up
    // (and the caller check), and read again only if the catch-up changed it: trainers are
    // added rarely, so a list costs one round trip instead of two.
    const version = this.index.version;
    const caughtUp = this.index.sync();
    let ids = this.index.pageIds(limit, offset, afterId, filter);
    let pageIds = ids.slice(0, limit);
    let reading = read(pageIds);
    // Awaited below, or dropped: a failure is thrown there, never left unhandled if the catch-up fails first.
    reading.catch(() => undefined);
    await caughtUp;
    if (this.index.version !== version) {
      const now = this.index.pageIds(limit, offset, afterId, filter);
      if (now.length !== ids.length || now.some((id, i) => id !== ids[i])) {
        ids = now;
        pageIds = ids.slice(0, limit);
        reading = read(pageIds);
      }
    }
    // A trainer removed by plain SQL since this process started is left out (see TrainerIndex).
    const found = await reading;
    const items = found.filter((item): item is T => item !== null);
    const nextCursor = ids.length > limit ? this.cursors.encode(pageIds[pageIds.length - 1]) : null;
    return { items, nextCursor, size: pageIds.length };
  }

  /**
   * The trainers of a page, in its order. Small pages are read with every other trainer read of
   * this turn (see `reads`), so that concurrent pages share a statement: REST lists of 20 went
   * from 2,117 to 2,832 req/s. Each is one key there, read as one id range. Large pages take a statement of their own: through the merged
   * reads a page of 100 cost 6.8 ms of CPU instead of 4.6 (a load, a key and a copy per trainer).
   * Those read only `fields` when given.
   */
  private async pageTrainers(ids: readonly number[], withCounts: boolean, fields?: readonly TrainerField[]): Promise<(Trainer | null)[]> {
    if (ids.length === 0) return [];
    if (ids.length <= MAX_MERGED_PAGE) return this.reads.load({ page: ids, count: withCounts }) as Promise<(Trainer | null)[]>;
    const trainers = fields
      ? await this.queries.someFieldsByIds(ids, withCounts, fields)
      : (await this.queries.byIds(ids, withCounts)).trainers;
    return ids.map((id) => trainers.get(id) ?? null);
  }

  /**
   * A trainer by nickname, case-insensitively, or null. A nickname outside the nickname rules
   * finds nobody without a statement: MariaDB's PAD SPACE comparison would find `ash` for `ash  `,
   * which the filter (TrainerIndex) does not.
   */
  findByNickname(nickname: string, { withCount = false } = {}): Promise<Trainer | null> {
    if (!isNickname(nickname)) return Promise.resolve(null);
    return this.queries.byNickname(nickname, withCount);
  }

  async exists(id: number): Promise<boolean> {
    return (await this.queries.creaturesOwned(id)) !== null;
  }

  /** How many creatures each trainer owns, in one statement (0 for a trainer that does not exist). */
  creatureCounts(trainerIds: readonly number[]): Promise<number[]> {
    return this.queries.creatureCounts(trainerIds);
  }

  /**
   * One trainer with its count as the caller `viewerId` sees it (the caller is checked by
   * RequestAuth.alongside, in the same statement); NOT_FOUND when there is no such trainer.
   */
  async profile(id: number, viewerId: number): Promise<TrainerProfile> {
    const found = await this.findById(id, { withCount: true });
    if (!found) throw new AppError('NOT_FOUND', `No trainer with id ${id}`);
    return profileOf(found, viewerId);
  }

  /**
   * A REST page of trainers as JSON text, as `viewerId` sees them (its own email only):
   * `{ items, totalCount, limit, offset, nextCursor }`, totalCount counting those matching the
   * filter; and its nextCursor. The trainers' JSON is written by the database (see
   * TrainerQueries.asJson) in the turn's merged reads, shared with every other request of that
   * turn: with the index catch-up and the caller check in one statement when the turn reads
   * nothing else (see readPagesAndCallers), else in a second one.
   */
  async profilePageJson(
    limit: number,
    offset: number,
    viewerId: number,
    { after, filter = {} }: { after?: string; filter?: TrainerConditions } = {},
  ): Promise<{ json: string; nextCursor: string | null }> {
    const { items, nextCursor } = await this.pageOf(limit, offset, after, filter, (ids) => this.pageJson(ids, viewerId));
    const cursor = nextCursor === null ? 'null' : JSON.stringify(nextCursor);
    const json = `{"items":[${items.join(',')}],"totalCount":${this.index.count(filter)},"limit":${limit},"offset":${offset},"nextCursor":${cursor}}`;
    return { json, nextCursor };
  }

  /** The JSON text of the trainers of a page as `viewer` sees them, in its order (null: not found); merged like pageTrainers. */
  private async pageJson(ids: readonly number[], viewer: number): Promise<(string | null)[]> {
    if (ids.length === 0) return [];
    if (ids.length <= MAX_MERGED_PAGE) return this.reads.load({ json: ids, viewer }) as Promise<(string | null)[]>;
    const alone = new Set<number>();
    const ranges: [number, number][] = [];
    addPage(ids, alone, ranges);
    const found = await this.queries.asJson([...alone], ranges, [viewer]);
    return ids.map((id) => jsonFor(found.json, id, viewer));
  }
}

export interface TrainerPageOptions {
  readonly withCounts?: boolean;
  /** A nextCursor from an earlier page. */
  readonly after?: string;
  readonly filter?: TrainerConditions;
  /**
   * A read about the page's trainers made at the same time as the trainers' own (their creatures,
   * when the query asks for them): its ids are known from the index before any row is read.
   */
  readonly alongside?: (ids: readonly number[]) => Promise<unknown>;
  /** The properties the page's reader will use (the id always comes): the others may be left out. */
  readonly fields?: readonly TrainerField[];
}

export interface TrainerPageResult extends Page<Trainer> {
  readonly nextCursor: string | null;
  /** How many trainers match the page's filter, as of the page (no statement). */
  readonly total: () => number;
  /** The items hold only the `fields` asked for. */
  readonly partial?: boolean;
}
