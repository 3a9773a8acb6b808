import DataLoader from 'dataloader';
import { In, type DataSource, type Repository } from 'typeorm';
import { hashPassword } from '../auth/password';
import { normalizeEmail, normalizeText } from '../common/text';
import type { Page } from '../common/args';
import { uniqueViolation } from '../db/errors';
import { isMysql } from '../db/data-source';
import { placeholders, selectRows, sqlDate, sqlInt } from '../db/rows';
import { AppError } from '../errors';
import type { Team } from './team';
import { Creature } from '../creatures/creature.entity';
import { Trainer } from './trainer.entity';

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

/** A trainer as the hand-written reads select it (everything but the password hash). */
interface TrainerRow {
  id: number | string;
  nickname: string;
  firstName: string;
  lastName: string;
  email: string;
  team: Team;
  createdAt: Date | string;
  creaturesOwned?: number | string | null;
}

const TRAINER_COLUMNS = 't.id, t.nickname, t.first_name AS firstName, t.last_name AS lastName, t.email, t.team, t.created_at AS createdAt';
/** Counted through the (trainer_id) index: only that trainer's index entries are read. */
const CREATURE_COUNT = '(SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id)';

function toTrainer(row: TrainerRow): Trainer {
  const trainer = new Trainer();
  trainer.id = sqlInt(row.id);
  trainer.nickname = row.nickname;
  trainer.firstName = row.firstName;
  trainer.lastName = row.lastName;
  trainer.email = row.email;
  trainer.team = row.team;
  trainer.createdAt = sqlDate(row.createdAt);
  return trainer;
}

/** A trainer and, when the statement counted them, its creatures. */
export interface TrainerWithCount {
  readonly trainer: Trainer;
  readonly creaturesOwned: number | undefined;
}

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

  constructor(private readonly dataSource: DataSource) {}

  // Looked up on use: the database may connect after the service is built (start-up retries).
  private get repo(): Repository<Trainer> {
    return this.dataSource.getRepository(Trainer);
  }

  private get creatures(): Repository<Creature> {
    return this.dataSource.getRepository(Creature);
  }

  /** Creates the account; the unique indexes decide duplicates, so concurrent registrations cannot both win. */
  async register(input: NewTrainer): Promise<Trainer> {
    const trainer = this.repo.create({
      nickname: input.nickname,
      nicknameKey: input.nickname.toLowerCase(),
      firstName: normalizeText(input.firstName),
      lastName: normalizeText(input.lastName),
      email: normalizeEmail(input.email),
      passwordHash: await hashPassword(input.password),
      team: input.team,
      createdAt: new Date(),
    });
    try {
      await this.repo.insert(trainer);
    } catch (error) {
      const violated = uniqueViolation(error);
      if (violated === undefined) throw error;
      throw violated === 'email'
        ? new AppError('TRAINER_ALREADY_EXISTS', 'A trainer with this email is already registered', [
            { field: 'email', message: 'is already registered' },
          ])
        : new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [{ field: 'nickname', message: 'is already taken' }]);
    }
    delete (trainer as Partial<Trainer>).passwordHash;
    return trainer;
  }

  /*
   * Reads on the hot paths are hand-written SQL through the DataSource (still counted and timed
   * by its logger): the ORM's query building and hydration cost more than the statement itself.
   */
  private select(sql: string, params: unknown[], prepared = false): Promise<TrainerRow[]> {
    return selectRows<TrainerRow>(this.dataSource, sql, params, { prepared });
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
    const counted =
      countFor.length === 0 ? '' : `, CASE WHEN t.id IN (${placeholders(countFor.length)}) THEN ${CREATURE_COUNT} END AS creaturesOwned`;
    // Prepared only while the lists are short: a request alone (its caller and one trainer) keeps
    // to a few statement shapes, while merged batches, whose lists have any length, would fill
    // each connection's prepared-statement cache with shapes used once.
    const rows = await this.select(
      `SELECT ${TRAINER_COLUMNS}${counted} FROM trainer t WHERE t.id IN (${placeholders(ids.length)})`,
      [...countFor, ...ids],
      ids.length + countFor.length <= 4,
    );
    const byId = new Map(rows.map((row) => [sqlInt(row.id), row]));
    // A trainer object per caller: requests never share one.
    return keys.map((key) => {
      const row = byId.get(key.id);
      if (!row) return null;
      const count = key.count && row.creaturesOwned !== null && row.creaturesOwned !== undefined ? sqlInt(row.creaturesOwned) : undefined;
      return { trainer: toTrainer(row), creaturesOwned: count };
    });
  }

  /** The id and password hash for an email, for authentication only. */
  async credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    return this.repo.findOne({
      select: { id: true, passwordHash: true },
      where: { email: normalizeEmail(email) },
    });
  }

  /**
   * A page by id. The skipped rows are walked in a derived table that reads ids only, and whole
   * rows are read for the page alone (a "deferred join"). A deep offset still walks every
   * skipped entry, whatever the query's shape; on MySQL it walks the narrow index on id rather
   * than the clustered primary key (about 11-14 ms instead of 17-21 ms at offset 99,980 of
   * 100,000, in MariaDB itself).
   */
  async page(limit: number, offset: number): Promise<Page<Trainer>> {
    const rows = await this.pageRows(limit, offset, false);
    return { items: rows.map(toTrainer), limit, offset };
  }

  /** A page by id with each trainer's creature count, in one statement. */
  async pageWithCounts(limit: number, offset: number): Promise<Page<TrainerWithCount>> {
    const rows = await this.pageRows(limit, offset, true);
    return { items: rows.map((row) => ({ trainer: toTrainer(row), creaturesOwned: sqlInt(row.creaturesOwned ?? 0) })), limit, offset };
  }

  private pageRows(limit: number, offset: number, withCounts: boolean): Promise<TrainerRow[]> {
    // MySQL walks the clustered primary key for `ORDER BY id` unless told to use the narrow
    // index on id alone, which skips rows about a third faster (AddTrainerIdIndex migration).
    const ids = isMysql(this.dataSource) ? 'trainer FORCE INDEX (IX_trainer_id)' : 'trainer';
    return this.select(
      `SELECT ${TRAINER_COLUMNS}${withCounts ? `, ${CREATURE_COUNT} AS creaturesOwned` : ''} FROM trainer t JOIN (SELECT id FROM ${ids} ORDER BY id LIMIT ? OFFSET ?) p ON p.id = t.id ORDER BY t.id`,
      [limit, offset],
    );
  }

  count(): Promise<number> {
    return this.repo.count();
  }

  /** How many creatures each trainer owns, in one statement. */
  async creatureCounts(trainerIds: readonly number[]): Promise<number[]> {
    if (trainerIds.length === 0) return [];
    const rows = await this.creatures
      .createQueryBuilder('c')
      .select('c.trainerId', 'trainerId')
      .addSelect('COUNT(*)', 'count')
      .where({ trainerId: In([...trainerIds]) })
      .groupBy('c.trainerId')
      .getRawMany<{ trainerId: number | string; count: number | string }>();
    const counts = new Map(rows.map((r) => [Number(r.trainerId), Number(r.count)]));
    return trainerIds.map((id) => counts.get(id) ?? 0);
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
    const [rows, totalCount] = await Promise.all([this.pageRows(limit, offset, true), this.count()]);
    const items = rows.map((row) => {
      const trainer = toTrainer(row);
      return { trainer, creaturesOwned: sqlInt(row.creaturesOwned ?? 0), email: visibleEmail(trainer, viewerId) };
    });
    return { items, totalCount, limit, offset };
  }
}
