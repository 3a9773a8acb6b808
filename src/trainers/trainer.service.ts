import { perTurn } from '../common/per-turn';
import type { LoginThrottle } from '../auth/login-throttle';
import type { PasswordHasher } from '../auth/password';
import { isNickname } from '../common/rules';
import { normalizeEmail, normalizeText } from '../common/text';
import { checkOffset, type Page } from '../common/args';
import type { CursorCodec } from '../common/cursor';
import type { TrainerConditions } from './trainer-filter';
import { uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import type { Team } from './team';
import { Trainer as TrainerClass, type Trainer } from './trainer.entity';
import type { TrainerLists } from './trainer-lists';
import type { TrainerField } from './trainer.columns';
import type { NewTrainerRow, TrainerQueries } from './trainer.queries';

export interface NewTrainer {
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly password: string;
  readonly team: Team;
}

const alreadyExists = (field: 'email' | 'nickname'): AppError =>
  field === 'email'
    ? new AppError('TRAINER_ALREADY_EXISTS', 'A trainer with this email is already registered', [
        { field: 'email', message: 'is already registered' },
      ])
    : new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [{ field: 'nickname', message: 'is already taken' }]);

/**
 * The privacy rule for emails, the only place that decides it: a trainer's email is shown to that
 * trainer only. `readerId` is the trainer the answer speaks to (the caller, or the trainer that
 * just registered or signed in); undefined for nobody. Both transports call it: GraphQL's
 * Trainer.email and the REST presenter (rest/present.ts).
 */
export const visibleEmail = (trainer: Trainer, readerId: number | undefined): string | null =>
  trainer.id === readerId ? trainer.email : null;

/**
 * What the merged reads (TrainerService.reads) are asked: one trainer, with its count or not, and
 * when `session` is set, the caller check (null unless that is an open session of the trainer).
 */
interface TrainerRead {
  readonly id: number;
  readonly count: boolean;
  readonly session?: number;
}

/** Reads merged into one statement at most (bounds it); a request's own reads are bounded by the GraphQL cost limit. */
const MAX_MERGED_READS = 1000;

export class TrainerService {
  /**
   * Single-trainer reads of every request in flight, merged into one statement per turn of the
   * event loop (the callers, the trainers they read, and the counts some of them want). Under
   * load, many requests arrive in one turn; each then shares a round trip instead of paying its
   * own (the driver's write, its packet parsing, the database's per-statement work). Nothing is
   * cached across requests: every read still goes to the database.
   */
  private readonly reads = perTurn<TrainerRead, Trainer | null>((keys) => this.readBatch(keys), MAX_MERGED_READS);

  /**
   * Single-trainer reads that may lag (another trainer's profile), merged like `reads` but sent
   * to a read replica; used only when there are replicas (otherwise `reads` merges them with the
   * caller checks, one statement for both).
   */
  private readonly laggingReads = perTurn<TrainerRead, Trainer | null>((keys) => this.readBatch(keys, true), MAX_MERGED_READS);

  constructor(
    private readonly queries: TrainerQueries,
    /** The unfiltered and per-team lists and counts; told of every trainer that joins, leaves or moves. */
    private readonly lists: TrainerLists,
    private readonly hasher: PasswordHasher,
    private readonly throttle: LoginThrottle,
    private readonly cursors: CursorCodec,
    /** MAX_OFFSET: pages further on are refused (checkOffset); cursors reach them. */
    private readonly maxOffset: number,
  ) {}

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
      this.lists.changed({ id, to: row.team });
    } catch (error) {
      const violated = uniqueViolation(error);
      if (violated === undefined) throw error;
      throw alreadyExists(violated === 'email' ? 'email' : 'nickname');
    }
    const { nickname, firstName, lastName, team, createdAt } = row;
    return Object.assign(new TrainerClass(), { id, nickname, firstName, lastName, email, team, createdAt });
  }

  /**
   * Inserts a trainer whose password was hashed already (a seed), in the same transaction as a
   * registration (its suffixes and its team's count with it), without a registration's checks
   * and limits. Returns its id.
   */
  async insertHashed(row: NewTrainerRow): Promise<number> {
    const id = await this.queries.insert(row);
    this.lists.changed({ id, to: row.team });
    return id;
  }

  /**
   * A trainer by id, with `creaturesOwned` read in the same statement when `withCount`. Merged
   * with every other trainer read of this turn, this request's and others' (see `reads`).
   */
  findById(id: number, { withCount = false, mayLag = false } = {}): Promise<Trainer | null> {
    return (mayLag && this.queries.hasReplicas ? this.laggingReads : this.reads).load({ id, count: withCount });
  }

  /**
   * The calling trainer of an access token, or null when it no longer exists or the token's
   * session has ended (logout, replay, expiry). Merged like findById: the session check rides on
   * the statement that reads the caller, so it costs no round trip of its own.
   */
  findCaller(id: number, sessionId: number): Promise<Trainer | null> {
    return this.reads.load({ id, count: false, session: sessionId });
  }

  /** Trainers by id, in no particular order (those that exist), merged like findById. */
  async findByIds(ids: readonly number[]): Promise<Trainer[]> {
    const found = await Promise.all(ids.map((id) => this.findById(id)));
    return found.filter((trainer): trainer is Trainer => trainer !== null);
  }

  private async readBatch(keys: readonly TrainerRead[], mayLag = false): Promise<(Trainer | null)[]> {
    const ids = new Set<number>();
    const callers = new Set<number>();
    let withCounts = false;
    for (const key of keys) {
      ids.add(key.id);
      if (key.session !== undefined) callers.add(key.id);
      withCounts ||= key.count;
    }
    // Counts are a column: read for all when any read asks (only those that asked keep theirs, below).
    const found = await this.queries.byIds([...ids], withCounts, [...callers], { mayLag });
    // A trainer object per read: requests never share one (the last read of an id takes the
    // object its row became, earlier ones a copy made before it changes), and only those that
    // asked get the count.
    const reads = new Map<number, number>();
    for (const key of keys) reads.set(key.id, (reads.get(key.id) ?? 0) + 1);
    return keys.map((key) => {
      const row = found.trainers.get(key.id);
      if (!row) return null;
      if (key.session !== undefined && !found.liveSessions.get(key.id)?.includes(key.session)) return null;
      const left = reads.get(key.id)! - 1;
      reads.set(key.id, left);
      const trainer = left === 0 ? row : Object.assign(new TrainerClass(), row);
      if (!key.count) delete trainer.creaturesOwned;
      return trainer;
    });
  }

  /** The id and password hash for an email, for authentication only. */
  credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    return this.queries.credentials(normalizeEmail(email));
  }

  /**
   * A page by id of the trainers matching `filter`, with each trainer's `creaturesOwned` from the
   * same statement when `withCounts`, and only `fields` when given. `after` (a nextCursor) starts
   * the page after that trainer; then `offset` must be 0. `nextCursor` is null exactly when no
   * matching trainer follows the page. `total` counts the matching trainers, when asked.
   */
  async page(
    limit: number,
    offset: number,
    { withCounts = false, after, filter = {}, alongside, fields }: TrainerPageOptions = {},
  ): Promise<TrainerPageResult> {
    const page = await this.pageOf(limit, offset, after, filter, withCounts, fields);
    await alongside?.(page.items);
    let total: Promise<number> | undefined;
    // The cursor is signed only if the query reads it (see CursorCodec.followed).
    return {
      items: page.items,
      limit,
      offset,
      get nextCursor() {
        return page.nextCursor;
      },
      total: () => (total ??= this.count(filter)),
      partial: fields !== undefined,
    };
  }

  /**
   * A page by id of the trainers matching `filter`, each with its `creaturesOwned`, and how many
   * trainers match the filter (`totalCount`), read at the same time as the page. `after` and
   * `nextCursor` as for `page`.
   */
  async pageWithCount(
    limit: number,
    offset: number,
    { after, filter = {} }: { after?: string; filter?: TrainerConditions } = {},
  ): Promise<CountedTrainerPage> {
    const [{ items, nextCursor }, totalCount] = await Promise.all([this.pageOf(limit, offset, after, filter, true), this.count(filter)]);
    return { items, nextCursor, totalCount };
  }

  /** How many trainers match `filter` (a nickname outside the nickname rules matches none). Counts may lag. */
  private count(filter: TrainerConditions): Promise<number> {
    if (filter.nickname !== undefined && !isNickname(filter.nickname)) return Promise.resolve(0);
    if (filter.nickname === undefined && filter.nicknameContains === undefined) return this.lists.count(filter.team);
    return this.queries.count(filter, { mayLag: true });
  }

  private async pageOf(
    limit: number,
    offset: number,
    after: string | undefined,
    filter: TrainerConditions,
    withCounts: boolean,
    fields?: readonly TrainerField[],
  ): Promise<{ items: Trainer[]; nextCursor: string | null }> {
    if (after !== undefined && offset !== 0) {
      throw new AppError('BAD_USER_INPUT', 'With after, offset must be 0', [{ field: 'offset', message: 'must be 0 when after is given' }]);
    }
    checkOffset(offset, this.maxOffset, 'trainers');
    const afterId = after === undefined ? 0 : this.cursors.decode(after);
    // A nickname outside the nickname rules finds nobody (MariaDB's PAD SPACE comparison would find `ash` for `ash  `).
    if (filter.nickname !== undefined && !isNickname(filter.nickname)) return { items: [], nextCursor: null };
    // One more than the page: whether another follows. Lists may lag (a read replica's, when there is one).
    const rows =
      (await this.listPage(filter, afterId, offset, limit + 1, withCounts, fields)) ??
      (await this.queries.page(filter, afterId, offset, limit + 1, withCounts, fields, { mayLag: true }));
    return rows.length > limit ? this.cursors.followed(rows.slice(0, limit)) : { items: rows, nextCursor: null };
  }

  /**
   * A page by offset of every trainer or of a team's, from the ids TrainerLists keeps and the rows
   * of their id range (TrainerLists.rows: merged with the turn's other pages of that list that read
   * the same columns); undefined for a page it leaves to a walk of
   * the index (the first page, a cursor, a nickname condition, or deeper than the ids kept).
   *
   * The kept ids may be up to a second older than a plain-SQL write. A trainer that left since
   * then is missing from the rows, and one added after the last kept id is not among them: when
   * the rows fall short of `limit`, the page reads on from its last row by a walk of the index, so
   * it is never short while trainers follow, and whether one more follows (`limit` counts it) is
   * what the table holds now.
   */
  private async listPage(
    filter: TrainerConditions,
    afterId: number,
    offset: number,
    limit: number,
    withCounts: boolean,
    fields?: readonly TrainerField[],
  ): Promise<Trainer[] | undefined> {
    // The first page reads the table itself (one short walk): it shows rows written by plain SQL at once.
    if (offset === 0 || afterId !== 0 || filter.nickname !== undefined || filter.nicknameContains !== undefined) return undefined;
    const kept = await this.lists.pageIds(filter.team, offset, limit);
    if (kept === undefined) return undefined;
    const { ids } = kept;
    const rows = await this.lists.rows(filter.team, ids, withCounts, fields);
    if (rows.length >= limit) return rows;
    const from = rows.length > 0 ? rows[rows.length - 1].id : kept.before;
    const more = await this.queries.page(filter, from, rows.length > 0 ? 0 : kept.beyond, limit - rows.length, withCounts, fields, {
      mayLag: true,
    });
    return rows.concat(more);
  }

  /**
   * A trainer by nickname, case-insensitively, or null. A nickname outside the nickname rules
   * finds nobody without a statement: MariaDB's PAD SPACE comparison would find `ash` for `ash  `
   * (the `nickname` filter is held to the same rule, see pageOf).
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
   * A trainer by id as the caller `viewerId` reads it (findById): another trainer may be read
   * from a replica, a moment out of date; the caller itself never is, so it never misses its own
   * changes. Null when there is no such trainer.
   */
  findFor(viewerId: number, id: number, { withCount = false } = {}): Promise<Trainer | null> {
    return this.findById(id, { withCount, mayLag: id !== viewerId });
  }
}

/** A page of trainers (with their counts) and how many trainers match its filter (TrainerService.pageWithCount). */
export interface CountedTrainerPage {
  readonly items: Trainer[];
  readonly nextCursor: string | null;
  readonly totalCount: number;
}

export interface TrainerPageOptions {
  readonly withCounts?: boolean;
  /** A nextCursor from an earlier page. */
  readonly after?: string;
  readonly filter?: TrainerConditions;
  /**
   * A read about the page's trainers made once they are known (their creatures, when the query
   * asks for them), before the page is answered.
   */
  readonly alongside?: (trainers: readonly Trainer[]) => Promise<unknown>;
  /** The properties the page's reader will use (the id always comes): the others may be left out. */
  readonly fields?: readonly TrainerField[];
}

export interface TrainerPageResult extends Page<Trainer> {
  readonly nextCursor: string | null;
  /** How many trainers match the page's filter (one statement, made when first asked). */
  readonly total: () => Promise<number>;
  /** The items hold only the `fields` asked for. */
  readonly partial?: boolean;
}
