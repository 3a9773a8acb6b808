import { checkOffset, type Page } from '../common/args';
import { perTurn } from '../common/per-turn';
import type { CursorCodec } from '../common/cursor';
import { nameKey, normalizeText } from '../common/text';
import { isForeignKeyViolation, uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import type { Trainer } from '../trainers/trainer.entity';
import type { TrainerQueries } from '../trainers/trainer.queries';
import type { Creature } from './creature.entity';
import type { Counted, CreatureField, CreatureQueries } from './creature.queries';
import { CreatureEventKind, toMessage } from '../events/creature-event';
import type { CreatureEventBus } from '../events/event-bus';

export interface NewCreature {
  readonly name: string;
  readonly speciesId: number;
  readonly level?: number;
}

/** What an update changes; a field left out stays as it is. */
export interface CreatureChange {
  readonly name?: string;
  readonly level?: number;
}

/** The trainer was deleted after its token was checked. */
const gone = () => new AppError('UNAUTHENTICATED', 'Your account no longer exists');
const throwGone = (): never => {
  throw gone();
};
const throwNotFound = (id: number): never => {
  throw new AppError('NOT_FOUND', `No creature with id ${id}`);
};

/** What makes two names the same creature: trimmed, then NFKC and fully case-folded (nameKey). */
export const creatureNameKey = (name: string): string => nameKey(normalizeText(name));

/** One call's creature pages: its trainers (in its order), which page of each, and what it knows of their counts. */
interface PagesRead {
  readonly trainerIds: readonly number[];
  readonly limit: number;
  readonly offset: number;
  readonly afterId: number;
  readonly fields?: readonly CreatureField[];
  readonly mayLag: boolean;
  readonly counts?: readonly (number | undefined)[];
}

/** Calls merged into one statement at most: a few pages of 100 trainers each. */
const MAX_MERGED_PAGE_READS = 8;
/** Trainers of merged calls in one statement at most (a call with more has its own statement, as before merging). */
const MAX_MERGED_TRAINERS = 800;

export class CreatureService {
  /**
   * The creature pages of every request of a turn (the pages of trainers in progress at once),
   * merged into one statement per kind of page (see readPages) instead of one each.
   */
  private readonly pageReads = perTurn<PagesRead, Creature[][]>((reads) => this.readPages(reads), MAX_MERGED_PAGE_READS);

  constructor(
    private readonly queries: CreatureQueries,
    private readonly trainers: TrainerQueries,
    private readonly events: CreatureEventBus,
    /** Signs and reads the cursors of creature pages (`after`, `nextCursor`). */
    private readonly cursors: CursorCodec,
    /** MAX_OFFSET: pages further on are refused (checkOffset); cursors reach them. */
    private readonly maxOffset: number,
  ) {}

  /** Whether a page at `offset` may be read (pagesForTrainers refuses the others). */
  allowsOffset(offset: number): boolean {
    return offset <= this.maxOffset;
  }

  /** Only the trainer itself may add to its creatures; the unique index settles duplicates, even concurrent ones. */
  async create(viewer: Trainer, trainerId: number, input: NewCreature): Promise<Creature> {
    if (trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only create creatures for yourself');
    }
    const name = normalizeText(input.name);
    const row = {
      name,
      nameKey: creatureNameKey(name),
      speciesId: input.speciesId,
      level: input.level ?? 1,
      trainerId,
      createdAt: new Date(),
    };
    try {
      return await this.write(
        trainerId,
        CreatureEventKind.CREATED,
        async (at) => (await this.queries.insertCounted(row, at)) ?? throwGone(),
      );
    } catch (error) {
      if (uniqueViolation(error) !== undefined) {
        throw new AppError('DUPLICATE_CREATURE', `You already have a creature named "${name}"`, [
          { field: 'name', message: 'is already used by another of your creatures' },
        ]);
      }
      if (isForeignKeyViolation(error)) throw gone();
      throw error;
    }
  }

  /**
   * Creatures by id (null where there is none), in one statement. With replicas, another
   * trainer's creature than `viewerId`'s may be read where reads may lag; the caller's own, and
   * those the replica does not show, are read again from the primary.
   */
  async findByIds(ids: readonly number[], viewerId?: number): Promise<(Creature | null)[]> {
    const mayLag = viewerId !== undefined && this.trainers.hasReplicas;
    const found = new Map((await this.queries.byIds(ids, { mayLag })).map((creature) => [creature.id, creature]));
    const again = mayLag ? ids.filter((id) => found.get(id)?.trainerId === viewerId || !found.has(id)) : [];
    if (again.length > 0) {
      for (const id of again) found.delete(id);
      for (const creature of await this.queries.byIds(again)) found.set(creature.id, creature);
    }
    return ids.map((id) => found.get(id) ?? null);
  }

  /**
   * A creature by id within one trainer's: NOT_FOUND when it does not exist or belongs to someone
   * else. Another trainer's than `viewerId` may be read where reads may lag.
   */
  async getOfTrainer(trainerId: number, id: number, viewerId?: number): Promise<Creature> {
    const mayLag = viewerId !== undefined && viewerId !== trainerId;
    const creature = await this.queries.byId(id, trainerId, { mayLag });
    if (!creature) throw new AppError('NOT_FOUND', `Trainer ${trainerId} has no creature with id ${id}`);
    return creature;
  }

  /**
   * Deletes one of the viewer's creatures and returns it as it was. A creature that does not
   * exist is NOT_FOUND; another trainer's is FORBIDDEN. With `trainerId` (the REST path's), the
   * caller must be that trainer (FORBIDDEN otherwise) and a creature of another trainer than
   * `trainerId` is NOT_FOUND, as for the REST GET. The DELETE is guarded by the owner too, so a
   * concurrent delete of the same creature reports NOT_FOUND, not success twice.
   */
  async delete(viewer: Trainer, id: number, trainerId?: number): Promise<Creature> {
    if (trainerId !== undefined && trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only delete your own creatures');
    }
    const creature = await this.queries.byId(id, trainerId);
    if (!creature) throw new AppError('NOT_FOUND', `No creature with id ${id}`);
    if (creature.trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only delete your own creatures');
    }
    // Concurrently deleted: nothing is counted (the trainer's event numbers keep no gap).
    return this.write(
      viewer.id,
      CreatureEventKind.DELETED,
      async (at) => (await this.queries.deleteCounted(id, viewer.id, at)) ?? throwNotFound(id),
    );
  }

  /**
   * Renames and/or re-levels one of the viewer's creatures and returns it as it now is. The
   * rules of creation hold: owner only (FORBIDDEN), a missing creature is NOT_FOUND, a name
   * another of the trainer's creatures has is DUPLICATE_CREATURE (decided by the unique index,
   * so concurrent renames cannot both win), while changing the case of its own name is allowed.
   * With `trainerId` (the REST path's), as for delete.
   */
  async update(viewer: Trainer, id: number, change: CreatureChange, trainerId?: number): Promise<Creature> {
    if (trainerId !== undefined && trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only change your own creatures');
    }
    if (change.name === undefined && change.level === undefined) {
      throw new AppError('BAD_USER_INPUT', 'An update must change at least one of name and level', [
        { field: 'input', message: 'must have name or level (or both)' },
      ]);
    }
    const creature = await this.queries.byId(id, trainerId);
    if (!creature) throw new AppError('NOT_FOUND', `No creature with id ${id}`);
    if (creature.trainerId !== viewer.id) {
      throw new AppError('FORBIDDEN', 'You can only change your own creatures');
    }
    const name = change.name === undefined ? undefined : normalizeText(change.name);
    try {
      const nameKey = name === undefined ? undefined : creatureNameKey(name);
      // Deleted meanwhile: nothing is counted (the trainer's event numbers keep no gap).
      return await this.write(
        viewer.id,
        CreatureEventKind.UPDATED,
        async (at) => (await this.queries.updateCounted(id, viewer.id, { name, nameKey, level: change.level }, at)) ?? throwNotFound(id),
      );
    } catch (error) {
      if (uniqueViolation(error) === undefined) throw error;
      throw new AppError('DUPLICATE_CREATURE', `You already have a creature named "${name}"`, [
        { field: 'name', message: 'is already used by another of your creatures' },
      ]);
    }
  }

  /**
   * One write of a trainer's creatures and its event. The query counts the event in the write's
   * own transaction (see nextEventSeqStatement), so the trainer's event numbers follow commit
   * order, and keeps it there (EventLog) for subscribers that resume; the event is published once
   * it has committed, with the time it was kept with.
   */
  private write(trainerId: number, kind: CreatureEventKind, change: (at: Date) => Promise<Counted>): Promise<Creature> {
    return this.events.during(trainerId, async () => {
      const at = new Date();
      const { creature, seq } = await change(at);
      this.events.publish(toMessage(kind, creature, seq, at));
      return creature;
    });
  }

  /**
   * One page of a trainer's creatures with their total; NOT_FOUND when there is no such trainer.
   * Another trainer's than `viewerId` may be read where reads may lag.
   */
  async pageOfTrainer(
    trainerId: number,
    page: CreaturePageArgs,
    viewerId?: number,
  ): Promise<Page<Creature> & CreaturePage & { totalCount: number }> {
    const mayLag = viewerId !== undefined && viewerId !== trainerId;
    const [[found], totalCount] = await Promise.all([
      this.pagesForTrainers([trainerId], page, undefined, { mayLag }),
      this.trainers.creaturesOwned(trainerId, { mayLag }),
    ]);
    if (totalCount === null) throw new AppError('NOT_FOUND', `No trainer with id ${trainerId}`);
    return { ...found, totalCount, limit: page.limit, offset: page.offset ?? 0 };
  }

  /**
   * One page of creatures (oldest first) for each trainer, in one statement, with `fields` (all
   * by default): from `offset` (at most MAX_OFFSET) or after the creature a cursor names (`after`,
   * a nextCursor; offset must then be 0). `nextCursor` is null exactly when none follows.
   */
  async pagesForTrainers(
    trainerIds: readonly number[],
    { limit, offset = 0, after }: CreaturePageArgs,
    fields?: readonly CreatureField[],
    {
      mayLag = false,
      counts,
    }: {
      mayLag?: boolean;
      /** The trainers' creature counts, where known (a page of trainers read them): they choose how each is read. */
      counts?: readonly (number | undefined)[];
    } = {},
  ): Promise<CreaturePage[]> {
    checkOffset(offset, this.maxOffset, 'creatures');
    if (after !== undefined && offset !== 0) {
      throw new AppError('BAD_USER_INPUT', 'With after, offset must be 0', [{ field: 'offset', message: 'must be 0 when after is given' }]);
    }
    const afterId = after === undefined ? 0 : this.cursors.decode(after);
    if (trainerIds.length === 0) return [];
    // One more than the page: whether another follows is read, not guessed.
    const pages = await this.pageReads.load({ trainerIds, limit: limit + 1, offset, afterId, fields, mayLag, counts });
    return pages.map((items) => (items.length > limit ? this.cursors.followed(items.slice(0, limit)) : { items, nextCursor: null }));
  }

  /**
   * The pages of a turn's calls: those asking for the same page (limit, offset, cursor,
   * properties, whether it may lag) in one statement for all their trainers, each trainer once.
   * A trainer on two calls' pages gets the same page objects in each: a page's creatures are only
   * read after this (by resolvers and presenters), never changed, so requests may share them. A
   * copy per call made many clients asking for the same first page allocate, and collect, a page
   * of objects more each (a sampling heap profile under the bench's load).
   */
  private async readPages(reads: readonly PagesRead[]): Promise<(Creature[][] | Error)[]> {
    // Per kind of page, calls in statements of at most MAX_MERGED_TRAINERS trainers (or one call).
    const groups = new Map<string, { members: number[]; trainers: number }>();
    const statements: number[][] = [];
    reads.forEach((read, i) => {
      const key = `${read.limit}:${read.offset}:${read.afterId}:${read.mayLag ? 1 : 0}:${read.fields?.join(',') ?? '*'}`;
      let group = groups.get(key);
      if (!group || group.trainers + read.trainerIds.length > MAX_MERGED_TRAINERS) {
        group = { members: [], trainers: 0 };
        groups.set(key, group);
        statements.push(group.members);
      }
      group.members.push(i);
      group.trainers += read.trainerIds.length;
    });
    const answers: (Creature[][] | Error)[] = reads.map(() => []);
    await Promise.all(
      statements.map(async (members) => {
        // Each trainer once, with the first count known of it.
        const counts = new Map<number, number | undefined>();
        for (const i of members) {
          reads[i].trainerIds.forEach((id, at) => {
            if (counts.get(id) === undefined) counts.set(id, reads[i].counts?.[at]);
          });
        }
        const { limit, offset, afterId, fields, mayLag } = reads[members[0]];
        const ids = [...counts.keys()];
        try {
          const pages = await this.queries.pagesForTrainers(ids, { limit, offset, afterId }, fields, {
            mayLag,
            counts: [...counts.values()],
          });
          const byTrainer = new Map(ids.map((id, at) => [id, pages[at]]));
          for (const i of members) answers[i] = reads[i].trainerIds.map((id) => byTrainer.get(id)!);
        } catch (error) {
          for (const i of members) answers[i] = error instanceof Error ? error : new Error(String(error));
        }
      }),
    );
    return answers;
  }
}

/** Which page of a trainer's creatures: `limit` of them from `offset`, or after a cursor (`after`). */
export interface CreaturePageArgs {
  readonly limit: number;
  readonly offset?: number;
  /** A nextCursor from an earlier page. */
  readonly after?: string;
}

/** A page of one trainer's creatures, and the cursor of the page that follows (null when none does). */
export interface CreaturePage {
  readonly items: Creature[];
  readonly nextCursor: string | null;
}
