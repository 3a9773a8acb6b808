import { In, type DataSource, type Repository } from 'typeorm';
import { hashPassword } from '../auth/password';
import { normalizeEmail, normalizeText } from '../common/text';
import type { Page } from '../common/args';
import { uniqueViolation } from '../db/errors';
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

/** The privacy rule for emails: a trainer's email is shown to that trainer only. */
export const visibleEmail = (trainer: Trainer, viewerId: number | undefined): string | null =>
  trainer.id === viewerId ? trainer.email : null;

export class TrainerService {
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
        : new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [
            { field: 'nickname', message: 'is already taken' },
          ]);
    }
    delete (trainer as Partial<Trainer>).passwordHash;
    return trainer;
  }

  findById(id: number): Promise<Trainer | null> {
    return this.repo.findOneBy({ id });
  }

  async getById(id: number): Promise<Trainer> {
    const trainer = await this.repo.findOneBy({ id });
    if (!trainer) throw new AppError('NOT_FOUND', `No trainer with id ${id}`);
    return trainer;
  }

  findByIds(ids: readonly number[]): Promise<Trainer[]> {
    return this.repo.findBy({ id: In([...ids]) });
  }

  /** The id and password hash for an email, for authentication only. */
  async credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    return this.repo.findOne({
      select: { id: true, passwordHash: true },
      where: { email: normalizeEmail(email) },
    });
  }

  async page(limit: number, offset: number): Promise<Page<Trainer>> {
    const items = await this.repo.find({ order: { id: 'ASC' }, take: limit, skip: offset });
    return { items, limit, offset };
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

  /** One trainer as `viewerId` sees it; NOT_FOUND when there is none. */
  async profile(id: number, viewerId: number): Promise<TrainerProfile> {
    const [trainer, [creaturesOwned]] = await Promise.all([this.getById(id), this.creatureCounts([id])]);
    return { trainer, creaturesOwned: creaturesOwned!, email: visibleEmail(trainer, viewerId) };
  }

  /** A page of trainers as `viewerId` sees them, with the total: three statements whatever the page size. */
  async profilePage(limit: number, offset: number, viewerId: number): Promise<Page<TrainerProfile> & { totalCount: number }> {
    const [page, totalCount] = await Promise.all([this.page(limit, offset), this.count()]);
    const counts = await this.creatureCounts(page.items.map((t) => t.id));
    const items = page.items.map((trainer, i) => ({ trainer, creaturesOwned: counts[i]!, email: visibleEmail(trainer, viewerId) }));
    return { items, totalCount, limit, offset };
  }
}
