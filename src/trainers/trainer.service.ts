import { In, type DataSource, type Repository } from 'typeorm';
import { hashPassword } from '../auth/password';
import { normalizeEmail, normalizeText } from '../common/text';
import type { Page } from '../common/args';
import { uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import type { Team } from './team';
import { Trainer } from './trainer.entity';

export interface NewTrainer {
  readonly nickname: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly password: string;
  readonly team: Team;
}

export class TrainerService {
  private readonly repo: Repository<Trainer>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(Trainer);
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
}
