import DataLoader from 'dataloader';
import type { PasswordHasher } from '../auth/password';
import { normalizeEmail, normalizeText } from '../common/text';
import type { Page } from '../common/args';
import type { CreatureQueries } from '../creatures/creature.queries';
import { uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import type { Team } from './team';
import { Trainer as TrainerClass, type Trainer } from './trainer.entity';
import type { TrainerQueries, TrainerWithCount } from './trainer.queries';

export interface NewTrainer {
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly password: string;
  readonly team: Team;
}

/** A trainer as a reader sees it: with its creature count, and its email only if the reader is that trainer. */
export interface TrainerProfile {
  readonly trainer: Trainer;
  readonly creaturesOwned: number;
  readonly email: string | null;
}

export type { TrainerWithCount };

/** The privacy rule for emails: a trainer's email is shown to that trainer only. */
export const visibleEmail = (trainer: Trainer, viewerId: number | undefined): string | null =>
  trainer.id === viewerId ? trainer.email : null;

/** One trainer to read, and whether its creature count is wanted with it. */
interface TrainerRead {
  readonly id: number;
  readonly count: boolean;
}

export class TrainerService {
  /**
   * Single-trainer reads of every request in flight, merged into one statement per turn of the
   * event loop (the callers, the trainers they read, and the counts some of them want). Under
   * load, many requests arrive in one turn; each then shares a round trip instead of paying its
   * own (the driver's write, its packet parsing, the database's per-statement work). Nothing is
   * cached across requests: every read still goes to the database.
   */
  private readonly reads = new DataLoader<TrainerRead, TrainerWithCount | null>((keys) => this.readBatch(keys), {
    cache: false,
    batchScheduleFn: (run) => setImmediate(run),
    // Bounds one statement's IN list; a request's own reads are bounded by the GraphQL cost limit.
    maxBatchSize: 1000,
  });

  constructor(
    private readonly queries: TrainerQueries,
    private readonly creatureQueries: CreatureQueries,
    private readonly hasher: PasswordHasher,
  ) {}

  /** Creates the account; the unique indexes decide duplicates, so concurrent registrations cannot both win. */
  async register(input: NewTrainer): Promise<Trainer> {
    const row = {
      nickname: input.nickname,
      nicknameKey: input.nickname.toLowerCase(),
      firstName: normalizeText(input.firstName),
      lastName: normalizeText(input.lastName),
      email: normalizeEmail(input.email),
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
      throw violated === 'email'
        ? new AppError('TRAINER_ALREADY_EXISTS', 'A trainer with this email is already registered', [
            { field: 'email', message: 'is already registered' },
          ])
        : new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [{ field: 'nickname', message: 'is already taken' }]);
    }
    const { nickname, firstName, lastName, email, team, createdAt } = row;
    return Object.assign(new TrainerClass(), { id, nickname, firstName, lastName, email, team, createdAt });
  }

  async findById(id: number): Promise<Trainer | null> {
    return (await this.reads.load({ id, count: false }))?.trainer ?? null;
  }

  /**
   * Trainers by id, in no particular order; those in `countFor` come with their creature count
   * from the same statement. Merged with the other requests' reads of this turn (see `reads`).
   */
  async findByIds(ids: readonly number[], countFor: readonly number[] = []): Promise<TrainerWithCount[]> {
    const found = await Promise.all(ids.map((id) => this.reads.load({ id, count: countFor.includes(id) })));
    return found.filter((item): item is TrainerWithCount => item !== null);
  }

  private async readBatch(keys: readonly TrainerRead[]): Promise<(TrainerWithCount | null)[]> {
    const ids = [...new Set(keys.map((key) => key.id))];
    const countFor = [...new Set(keys.filter((key) => key.count).map((key) => key.id))];
    const found = await this.queries.byIds(ids, countFor);
    // A trainer object per caller: requests never share one.
    return keys.map((key) => {
      const row = found.get(key.id);
      if (!row) return null;
      return { trainer: Object.assign(new TrainerClass(), row.trainer), creaturesOwned: key.count ? row.creaturesOwned : undefined };
    });
  }

  /** The id and password hash for an email, for authentication only. */
  credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    return this.queries.credentials(normalizeEmail(email));
  }

  /** A page by id (see TrainerQueries.page for how deep pages are read). */
  async page(limit: number, offset: number): Promise<Page<Trainer>> {
    const rows = await this.queries.page(limit, offset, false);
    return { items: rows.map((row) => row.trainer), limit, offset };
  }

  /** A page by id with each trainer's creature count, in one statement. */
  async pageWithCounts(limit: number, offset: number): Promise<Page<TrainerWithCount>> {
    const rows = await this.queries.page(limit, offset, true);
    return { items: rows.map((row) => ({ trainer: row.trainer, creaturesOwned: row.creaturesOwned ?? 0 })), limit, offset };
  }

  count(): Promise<number> {
    return this.queries.count();
  }

  exists(id: number): Promise<boolean> {
    return this.queries.exists(id);
  }

  /** How many creatures each trainer owns, in one statement. */
  creatureCounts(trainerIds: readonly number[]): Promise<number[]> {
    return this.creatureQueries.countsByTrainer(trainerIds);
  }

  /**
   * One trainer with its count as the caller `viewerId` sees it. The caller is read in the same
   * statement (see `reads`), which checks it still exists: UNAUTHENTICATED when it does not (its
   * token outlived it), NOT_FOUND when there is no such trainer.
   */
  async profile(id: number, viewerId: number): Promise<TrainerProfile> {
    const [viewer, found] = await Promise.all([this.reads.load({ id: viewerId, count: false }), this.reads.load({ id, count: true })]);
    if (!viewer) throw new AppError('UNAUTHENTICATED', 'Invalid or expired token');
    if (!found) throw new AppError('NOT_FOUND', `No trainer with id ${id}`);
    return { trainer: found.trainer, creaturesOwned: found.creaturesOwned ?? 0, email: visibleEmail(found.trainer, viewerId) };
  }

  /** A page of trainers with their counts as `viewerId` sees them, and the total: two statements whatever the page size. */
  async profilePage(limit: number, offset: number, viewerId: number): Promise<Page<TrainerProfile> & { totalCount: number }> {
    const [rows, totalCount] = await Promise.all([this.queries.page(limit, offset, true), this.count()]);
    const items = rows.map(({ trainer, creaturesOwned }) => ({
      trainer,
      creaturesOwned: creaturesOwned ?? 0,
      email: visibleEmail(trainer, viewerId),
    }));
    return { items, totalCount, limit, offset };
  }
}
