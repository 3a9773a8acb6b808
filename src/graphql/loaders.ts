import DataLoader from 'dataloader';
import type { RequestAuth } from '../auth/request-auth';
import type { Creature } from '../creatures/creature.entity';
import type { CreatureField } from '../creatures/creature.queries';
import type { CreaturePage, CreaturePageArgs } from '../creatures/creature.service';
import type { Services } from '../services';
import type { Trainer } from '../trainers/trainer.entity';
import type { TrainerPageOptions, TrainerPageResult } from '../trainers/trainer.service';

/**
 * Per-request reads for GraphQL: every relation field of one level becomes one SQL statement,
 * so a page of trainers with their creatures and counts costs a fixed number of statements.
 * Trainers read here (a page, a trainer(id), the caller) are remembered for the request, so
 * `Creature.trainer` finds them without another read.
 */
export class Loaders {
  private readonly trainers: DataLoader<number, Trainer | null>;
  private readonly creatureCounts: DataLoader<number, number>;
  private readonly creatures: DataLoader<number, Creature | null>;
  private readonly creaturePages = new Map<string, DataLoader<number, CreaturePage>>();
  /**
   * Creature pages read before their fields ask (by page key, then trainer id): a page of
   * trainers that selects `creatures` reads them at the same time as the trainers, so the 100
   * `creatures` fields answer at once instead of each waiting on a loader (one round trip less,
   * and no promise per trainer alive across it).
   */
  private readonly readAhead = new Map<string, Map<number, CreaturePage>>();
  /** The caller as its auth read it serves `Creature.trainer` until forget(): it was read before anything since. */
  private viewerIsCurrent = true;

  constructor(
    private readonly services: Services,
    private readonly auth: RequestAuth,
  ) {
    this.trainers = new DataLoader(async (ids) => {
      const found = new Map<number, Trainer>();
      const viewer = this.viewerIsCurrent ? auth.known : undefined;
      if (viewer) found.set(viewer.id, viewer);
      const missing = ids.filter((id) => !found.has(id));
      if (missing.length > 0) for (const trainer of await services.trainers.findByIds(missing)) found.set(trainer.id, trainer);
      return ids.map((id) => found.get(id) ?? null);
    });
    this.creatureCounts = new DataLoader((ids) => services.trainers.creatureCounts(ids));
    this.creatures = new DataLoader((ids) => services.creatures.findByIds(ids, this.callerId()));
  }

  /** The caller's trainer id, from its token (undefined without a valid one). */
  private callerId(): number | undefined {
    try {
      return this.auth.tokenId();
    } catch {
      return undefined;
    }
  }

  /**
   * Forgets everything read so far (a subscription's context serves many events over time),
   * the caller its auth read included: a socket's auth read it when the socket opened, and the
   * trainer may have changed since (its own subscriber sees its new nickname too).
   */
  forget(): void {
    this.viewerIsCurrent = false;
    this.trainers.clearAll();
    this.creatureCounts.clearAll();
    this.creatures.clearAll();
    this.creaturePages.clear();
    this.readAhead.clear();
  }

  trainer(id: number): Promise<Trainer | null> {
    return this.trainers.load(id);
  }

  /** trainer(id): read alongside the caller check (one statement), with its count when the query asks for it. */
  async trainerById(id: number, { withCount }: { withCount: boolean }): Promise<Trainer | null> {
    const trainer = await this.auth.alongside((viewerId) => this.services.trainers.findFor(viewerId, id, { withCount }));
    if (trainer) this.trainers.prime(trainer.id, trainer);
    return trainer;
  }

  /**
   * creature(id), and creatures a router asks for by key: every one of a turn in one statement,
   * alongside the caller check.
   */
  creatureById(id: number): Promise<Creature | null> {
    return this.auth.alongside(() => this.creatures.load(id));
  }

  /**
   * A page of trainers, with their counts in the same statement when the query asks for them.
   * With `creatures`, the page's creature pages are read at the same time as its trainers (see
   * readAhead).
   */
  async trainerPage(
    limit: number,
    offset: number,
    { creatures, ...options }: Omit<TrainerPageOptions, 'alongside'> & { creatures?: CreaturePageRequest },
  ): Promise<TrainerPageResult> {
    // Creature pages beyond MAX_OFFSET are not read ahead: each `creatures` field reports its refusal.
    const ahead = creatures && this.services.creatures.allowsOffset(creatures.offset ?? 0) ? creatures : undefined;
    const alongside = ahead && ((trainers: readonly Trainer[]) => this.readCreaturesAhead(trainers, ahead));
    // The counts (a column of the page's rows) tell how each trainer's creatures are best read.
    const withCounts = options.withCounts === true || ahead !== undefined;
    const page = await this.services.trainers.page(limit, offset, { ...options, withCounts, alongside });
    // Trainers read whole serve Creature.trainer too; those read in part would answer it wrong.
    if (!page.partial) for (const trainer of page.items) this.trainers.prime(trainer.id, trainer);
    return page;
  }

  /** A trainer by nickname, read alongside the caller check like trainerById. */
  async trainerByNickname(nickname: string, { withCount }: { withCount: boolean }): Promise<Trainer | null> {
    const trainer = await this.auth.alongside(() => this.services.trainers.findByNickname(nickname, { withCount }));
    if (trainer) this.trainers.prime(trainer.id, trainer);
    return trainer;
  }

  /** Read with the trainer when its statement counted them; otherwise one statement for the whole level. */
  creaturesOwned(trainer: Trainer): number | Promise<number> {
    return trainer.creaturesOwned ?? this.creatureCounts.load(trainer.id);
  }

  /**
   * A page of each trainer's creatures, with the properties in `fields` (see
   * CreatureService.pagesForTrainers): fields asking for different pages or properties are
   * batched separately.
   */
  creaturePage(trainerId: number, request: CreaturePageRequest): CreaturePage | Promise<CreaturePage> {
    const key = pageKey(request);
    const known = this.readAhead.get(key)?.get(trainerId);
    if (known) return known;
    // Another trainer's creatures may lag; the caller's own never do.
    const mayLag = trainerId !== this.callerId();
    const loaderKey = mayLag ? `${key}:lag` : key;
    let loader = this.creaturePages.get(loaderKey);
    if (!loader) {
      loader = new DataLoader((ids) => this.services.creatures.pagesForTrainers(ids, request, request.fields, { mayLag }));
      this.creaturePages.set(loaderKey, loader);
    }
    return loader.load(trainerId);
  }

  /** Reads the creature pages of a page's trainers into readAhead, where creaturePage finds them. */
  private async readCreaturesAhead(trainers: readonly Trainer[], request: CreaturePageRequest): Promise<void> {
    // A list's creatures, like the list, may lag.
    const pages = await this.services.creatures.pagesForTrainers(
      trainers.map((trainer) => trainer.id),
      request,
      request.fields,
      { mayLag: true, counts: trainers.map((trainer) => trainer.creaturesOwned) },
    );
    const key = pageKey(request);
    let known = this.readAhead.get(key);
    if (!known) this.readAhead.set(key, (known = new Map<number, CreaturePage>()));
    trainers.forEach((trainer, i) => known.set(trainer.id, pages[i]));
  }
}

/** One page of creatures per trainer, with these properties (a `creatures` or `creaturePage` field's arguments and selection). */
export interface CreaturePageRequest extends CreaturePageArgs {
  /** Sorted. */
  readonly fields: readonly CreatureField[];
}

const pageKey = ({ limit, offset = 0, after = '', fields }: CreaturePageRequest) => `${limit}:${offset}:${after}:${fields.join(',')}`;
