import type { DataSource, Repository } from 'typeorm';
import type { Page } from '../common/args';
import { foldCase, normalizeText } from '../common/text';
import { isForeignKeyViolation, uniqueViolation } from '../db/errors';
import { placeholders, selectRows, sqlDate, sqlInt } from '../db/rows';
import { AppError } from '../errors';
import { Trainer } from '../trainers/trainer.entity';
import { Creature } from './creature.entity';

export interface NewCreature {
  readonly name: string;
  readonly speciesId: number;
  readonly level?: number;
}

interface CreatureRow {
  id: number | string;
  name: string;
  speciesId: number | string;
  level: number | string;
  trainerId: number | string;
  createdAt: Date | string;
}

const CREATURE_COLUMNS = 'id, name, species_id AS speciesId, level, trainer_id AS trainerId, created_at AS createdAt';

function toCreature(row: CreatureRow): Creature {
  const creature = new Creature();
  creature.id = sqlInt(row.id);
  creature.name = row.name;
  creature.speciesId = sqlInt(row.speciesId);
  creature.level = sqlInt(row.level);
  creature.trainerId = sqlInt(row.trainerId);
  creature.createdAt = sqlDate(row.createdAt);
  return creature;
}

/** What makes two names the same creature: trimmed, NFC, case-folded. */
export const creatureNameKey = (name: string): string => foldCase(normalizeText(name));

export class CreatureService {
  constructor(private readonly dataSource: DataSource) {}

  // Looked up on use: the database may connect after the service is built (start-up retries).
  private get repo(): Repository<Creature> {
    return this.dataSource.getRepository(Creature);
  }

  private get trainerRepo(): Repository<Trainer> {
    return this.dataSource.getRepository(Trainer);
  }

  /** Only the trainer itself may add to its creatures; the unique index settles duplicates, even concurrent ones. */
  async create(viewer: Trainer, trainerId: number, input: NewCreature): Promise<Creature> {
    if (trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only create creatures for yourself');
    }
    const name = normalizeText(input.name);
    const creature = this.repo.create({
      name,
      nameKey: creatureNameKey(name),
      speciesId: input.speciesId,
      level: input.level ?? 1,
      trainerId,
      createdAt: new Date(),
    });
    try {
      await this.repo.insert(creature);
    } catch (error) {
      if (uniqueViolation(error) !== undefined) {
        throw new AppError('DUPLICATE_CREATURE', `You already have a creature named "${name}"`, [
          { field: 'name', message: 'is already used by another of your creatures' },
        ]);
      }
      // The trainer was deleted after its token was checked.
      if (isForeignKeyViolation(error)) throw new AppError('UNAUTHENTICATED', 'Your account no longer exists');
      throw error;
    }
    return creature;
  }

  findById(id: number): Promise<Creature | null> {
    return this.repo.findOneBy({ id });
  }

  /** A creature by id within one trainer's: NOT_FOUND when it does not exist or belongs to someone else. */
  async getOfTrainer(trainerId: number, id: number): Promise<Creature> {
    const creature = await this.repo.findOneBy({ id, trainerId });
    if (!creature) throw new AppError('NOT_FOUND', `Trainer ${trainerId} has no creature with id ${id}`);
    return creature;
  }

  /**
   * Deletes one of the viewer's creatures and returns it as it was. With `trainerId` (the REST
   * path's), the caller must be that trainer and the creature one of its own, else NOT_FOUND.
   * The DELETE is guarded by the owner too, so a concurrent delete of the same creature
   * reports NOT_FOUND, not success twice.
   */
  async delete(viewer: Trainer, id: number, trainerId?: number): Promise<Creature> {
    if (trainerId !== undefined && trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only delete your own creatures');
    }
    const creature = trainerId === undefined ? await this.repo.findOneBy({ id }) : await this.repo.findOneBy({ id, trainerId });
    if (!creature) throw new AppError('NOT_FOUND', `No creature with id ${id}`);
    if (creature.trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only delete your own creatures');
    }
    const result = await this.repo.delete({ id, trainerId: viewer.id });
    if (result.affected === 0) throw new AppError('NOT_FOUND', `No creature with id ${id}`);
    return creature;
  }

  /** One page of a trainer's creatures with their total; NOT_FOUND when there is no such trainer. */
  async pageOfTrainer(trainerId: number, limit: number, offset: number): Promise<Page<Creature> & { totalCount: number }> {
    const [[items], totalCount, exists] = await Promise.all([
      this.pagesForTrainers([trainerId], limit, offset),
      this.repo.countBy({ trainerId }),
      this.trainerExists(trainerId),
    ]);
    if (!exists) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
    return { items: items, totalCount: totalCount, limit, offset };
  }

  private trainerExists(id: number): Promise<boolean> {
    return this.trainerRepo.existsBy({ id });
  }

  /**
   * One page of creatures (oldest first) for each trainer, in one statement whatever the
   * number of trainers: ROW_NUMBER() per trainer picks each page (SQLite 3.25+, MariaDB 10.2+, MySQL 8).
   */
  async pagesForTrainers(trainerIds: readonly number[], limit: number, offset: number): Promise<Creature[][]> {
    if (trainerIds.length === 0) return [];
    // Hand-written (see TrainerService.select): a page of 100 trainers brings 1,000 creatures,
    // and hydrating them through the ORM cost more CPU and memory than the statement.
    const rows =
      trainerIds.length === 1
        ? await selectRows<CreatureRow>(
            this.dataSource,
            `SELECT ${CREATURE_COLUMNS} FROM creature WHERE trainer_id = ? ORDER BY id LIMIT ? OFFSET ?`,
            [trainerIds[0], limit, offset],
          )
        : await selectRows<CreatureRow>(
            this.dataSource,
            `SELECT ${CREATURE_COLUMNS} FROM (SELECT c.*, ROW_NUMBER() OVER (PARTITION BY c.trainer_id ORDER BY c.id) AS rn FROM creature c WHERE c.trainer_id IN (${placeholders(trainerIds.length)})) ranked WHERE rn > ? AND rn <= ? ORDER BY id`,
            [...trainerIds, offset, offset + limit],
          );
    const byTrainer = new Map<number, Creature[]>(trainerIds.map((id) => [id, []]));
    for (const row of rows) {
      const creature = toCreature(row);
      byTrainer.get(creature.trainerId)?.push(creature);
    }
    return trainerIds.map((id) => byTrainer.get(id)!);
  }
}
