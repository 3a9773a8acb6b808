import DataLoader from 'dataloader';
import type { Creature } from '../creatures/creature.entity';
import type { Services } from '../services';
import type { Trainer } from '../trainers/trainer.entity';

/**
 * Per-request batching: every relation field of one GraphQL level becomes one SQL statement,
 * so a page of trainers with their creatures and counts costs a fixed number of queries.
 */
export class Loaders {
  readonly trainerById: DataLoader<number, Trainer | null>;
  readonly creatureCount: DataLoader<number, number>;
  private readonly creaturePages = new Map<string, DataLoader<number, Creature[]>>();
  /** Trainers of the pending batch whose `creaturesOwned` the query asks for. */
  private readonly countWanted = new Set<number>();

  constructor(private readonly services: Services) {
    this.trainerById = new DataLoader(async (ids) => {
      const countFor = ids.filter((id) => this.countWanted.delete(id));
      const found = new Map<number, Trainer>();
      for (const { trainer, creaturesOwned } of await services.trainers.findByIds(ids, countFor)) {
        found.set(trainer.id, trainer);
        if (creaturesOwned !== undefined) this.creatureCount.prime(trainer.id, creaturesOwned);
      }
      return ids.map((id) => found.get(id) ?? null);
    });
    this.creatureCount = new DataLoader((ids) => services.trainers.creatureCounts(ids));
  }

  /**
   * A trainer whose `creaturesOwned` is wanted too: the count comes in the same statement as
   * the trainer (when the trainer is not already loaded).
   */
  trainerWithCount(id: number): Promise<Trainer | null> {
    this.countWanted.add(id);
    return this.trainerById.load(id);
  }

  /** The loader of one page shape: fields asking for different pages are batched separately. */
  creaturePage(limit: number, offset: number): DataLoader<number, Creature[]> {
    const key = `${limit}:${offset}`;
    let loader = this.creaturePages.get(key);
    if (!loader) {
      loader = new DataLoader((ids) => this.services.creatures.pagesForTrainers(ids, limit, offset));
      this.creaturePages.set(key, loader);
    }
    return loader;
  }
}
