import { idsCondition, placeholders, sqlDate, sqlInt, type BatchStatement, type Sql } from '../db/sql';
import { eventSeqOf, nextEventSeqStatements } from '../trainers/event-seq.queries';
import { CreatureEventKind } from '../events/creature-event';
import type { EventLog } from '../events/event-log.queries';
import { Creature } from './creature.entity';

/*
 * Every statement about the creature table. Services call these; nothing else writes SQL for
 * creatures. A new column touches this file, the entity and a migration.
 */

interface CreatureRow {
  id: number | string;
  name: string;
  speciesId: number | string;
  level: number | string;
  trainerId: number | string;
  createdAt: Date | string;
}

/** A creature just written, and the number of its event among its trainer's. */
export interface Counted {
  readonly creature: Creature;
  readonly seq: number;
}

/** A row to insert: the trimmed NFC name and its uniqueness key. */
export interface NewCreatureRow {
  readonly name: string;
  readonly nameKey: string;
  readonly speciesId: number;
  readonly level: number;
  readonly trainerId: number;
  readonly createdAt: Date;
}

const COLUMNS = 'id, name, species_id AS speciesId, level, trainer_id AS trainerId, created_at AS createdAt';

/** Each property of a creature as a column of the table (`name`: `name`, `speciesId`: `species_id`). */
const COLUMN_OF = {
  id: 'id',
  name: 'name',
  speciesId: 'species_id',
  level: 'level',
  trainerId: 'trainer_id',
  createdAt: 'created_at',
} as const;

/** A property of a creature that can be read (every column but the name key). */
export type CreatureField = keyof typeof COLUMN_OF;

export const isCreatureField = (name: string): name is CreatureField => Object.hasOwn(COLUMN_OF, name);

/**
 * A trainer is ranked with others (ROW_NUMBER over all its creatures) while it has at most this
 * many times the creatures its page walks; beyond, its page is read from its index range alone.
 */
const WINDOW_FACTOR = 4;

/** Every readable property, sorted. */
export const CREATURE_FIELDS: readonly CreatureField[] = (Object.keys(COLUMN_OF) as CreatureField[]).sort();

/** A creature shows only while its trainer exists (see CreatureQueries.byId). */
const OWNED = 'EXISTS (SELECT 1 FROM trainer t WHERE t.id = c.trainer_id)';

/** A creature with the properties its row holds (all of them, or those a page asked for). */
function toCreature(row: Partial<CreatureRow>): Creature {
  const creature = new Creature();
  creature.id = sqlInt(row.id!);
  if (row.name !== undefined) creature.name = row.name;
  if (row.speciesId !== undefined) creature.speciesId = sqlInt(row.speciesId);
  if (row.level !== undefined) creature.level = sqlInt(row.level);
  if (row.trainerId !== undefined) creature.trainerId = sqlInt(row.trainerId);
  if (row.createdAt !== undefined) creature.createdAt = sqlDate(row.createdAt);
  return creature;
}

/**
 * The statements that remove, a stretch at a time, the creatures a deleted trainer left behind
 * (see TrainerQueries.deleteAccount): read up to `limit` of them after `afterId`, oldest first
 * (for their DELETED events), then delete those, by the trainer's own index range only. Nothing
 * else writes them (every creature write needs its trainer's row) and no read shows them (see
 * `byId`), so the two need no transaction.
 */
export function leftCreatures(
  trainerId: number,
  afterId: number,
  limit: number,
): { read: BatchStatement; remove: (lastId: number) => BatchStatement } {
  return {
    read: {
      sql: `SELECT ${COLUMNS} FROM creature WHERE trainer_id = ? AND id > ? ORDER BY id LIMIT ${Math.trunc(limit)}`,
      params: [trainerId, afterId],
    },
    remove: (lastId) => ({ sql: 'DELETE FROM creature WHERE trainer_id = ? AND id > ? AND id <= ?', params: [trainerId, afterId, lastId] }),
  };
}

/** The creatures a leftCreatures read gave. */
export const creaturesRead = (rows: readonly unknown[]): Creature[] => (rows as CreatureRow[]).map(toCreature);

export class CreatureQueries {
  constructor(
    private readonly sql: Sql,
    /** Where each write's event is kept, in the write's transaction. */
    private readonly events: EventLog,
  ) {}

  /**
   * Inserts a creature and counts its event, in one transaction with the event kept (at `at`);
   * the creature and the event's number. The unique index on (trainer, name key) decides
   * duplicates (the error is thrown).
   */
  async insertCounted(row: NewCreatureRow, at: Date): Promise<Counted | null> {
    const counting = nextEventSeqStatements(this.sql.isMysql, row.trainerId, undefined, 1);
    const [bump, inserted] = (
      await this.sql.batch([
        ...counting,
        {
          sql: 'INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
          params: [row.name, row.nameKey, row.speciesId, row.level, row.trainerId, this.sql.date(row.createdAt)],
        },
        ...this.events.recordStatements(CreatureEventKind.CREATED, row.trainerId, undefined, at),
      ])
    ).slice(counting.length - 1);
    const seq = eventSeqOf(this.sql.isMysql, bump);
    if (seq === null) return null;
    const creature = new Creature();
    Object.assign(creature, {
      id: inserted.insertId,
      name: row.name,
      speciesId: row.speciesId,
      level: row.level,
      trainerId: row.trainerId,
    });
    creature.createdAt = row.createdAt;
    return { creature, seq };
  }

  /**
   * A creature by id; with `trainerId`, only if that trainer owns it. Only while its trainer
   * exists: a deleted trainer's creatures are removed a stretch at a time after it (see
   * leftCreatures) and must not show meanwhile (one more lookup, of the trainer's primary key).
   */
  async byId(id: number, trainerId?: number, { mayLag = false } = {}): Promise<Creature | null> {
    const [row] =
      trainerId === undefined
        ? await this.sql.rows<CreatureRow>(`SELECT ${COLUMNS} FROM creature c WHERE c.id = ? AND ${OWNED}`, [id], {
            prepared: true,
            mayLag,
          })
        : await this.sql.rows<CreatureRow>(
            `SELECT ${COLUMNS} FROM creature c WHERE c.id = ? AND c.trainer_id = ? AND ${OWNED}`,
            [id, trainerId],
            {
              prepared: true,
              mayLag,
            },
          );
    return row ? toCreature(row) : null;
  }

  /** Creatures by id, those that exist (as `byId` sees them), in no particular order: one statement. */
  async byIds(ids: readonly number[], { mayLag = false } = {}): Promise<Creature[]> {
    // One id (creature(id)) reads as `byId`, prepared; a list takes a statement text per length.
    if (ids.length === 1) return [await this.byId(ids[0], undefined, { mayLag })].filter((creature) => creature !== null);
    const rows = await this.sql.rows<CreatureRow>(
      `SELECT ${COLUMNS} FROM creature c WHERE c.id IN (${placeholders(ids.length)}) AND ${OWNED}`,
      ids,
      {
        mayLag,
      },
    );
    return rows.map(toCreature);
  }

  /**
   * Renames and/or re-levels a creature if `trainerId` owns it, and counts its event, in one
   * transaction with the event kept (at `at`); the creature as it now is and the event's number,
   * or null when the trainer has no such creature (deleted meanwhile: nothing is counted). The
   * unique index on (trainer, name key) decides duplicates, as for inserts (the error is thrown,
   * and nothing is counted).
   */
  async updateCounted(
    id: number,
    trainerId: number,
    change: { name?: string; nameKey?: string; level?: number },
    at: Date,
  ): Promise<Counted | null> {
    const set: string[] = [];
    const values: unknown[] = [];
    if (change.name !== undefined) {
      set.push('name = ?', 'name_key = ?');
      values.push(change.name, change.nameKey);
    }
    if (change.level !== undefined) {
      set.push('level = ?');
      values.push(change.level);
    }
    const counting = nextEventSeqStatements(this.sql.isMysql, trainerId, id);
    const [bump, , read] = (
      await this.sql.batch([
        ...counting,
        { sql: `UPDATE creature SET ${set.join(', ')} WHERE id = ? AND trainer_id = ?`, params: [...values, id, trainerId] },
        { sql: `SELECT ${COLUMNS} FROM creature WHERE id = ? AND trainer_id = ?`, params: [id, trainerId] },
        ...this.events.recordStatements(CreatureEventKind.UPDATED, trainerId, id, at),
      ])
    ).slice(counting.length - 1);
    const seq = eventSeqOf(this.sql.isMysql, bump);
    const row = read.rows[0] as CreatureRow | undefined;
    return seq === null || !row ? null : { creature: toCreature(row), seq };
  }

  /**
   * Deletes a creature if `trainerId` owns it, and counts its event, in one transaction with the
   * event kept (at `at`); the creature as it was and the event's number, or null when the trainer
   * has no such creature (a concurrent delete won: nothing is counted).
   */
  async deleteCounted(id: number, trainerId: number, at: Date): Promise<Counted | null> {
    const counting = nextEventSeqStatements(this.sql.isMysql, trainerId, id, -1);
    const recording = this.events.recordStatements(CreatureEventKind.DELETED, trainerId, id, at);
    const [bump, read, ...rest] = (
      await this.sql.batch([
        ...counting,
        { sql: `SELECT ${COLUMNS} FROM creature WHERE id = ? AND trainer_id = ?`, params: [id, trainerId] },
        ...recording,
        { sql: 'DELETE FROM creature WHERE id = ? AND trainer_id = ?', params: [id, trainerId] },
      ])
    ).slice(counting.length - 1);
    const deleted = rest[rest.length - 1];
    const seq = eventSeqOf(this.sql.isMysql, bump);
    const row = read.rows[0] as CreatureRow | undefined;
    return seq === null || !row || deleted.affected === 0 ? null : { creature: toCreature(row), seq };
  }

  /**
   * One page of creatures (oldest first) for each trainer, in one statement whatever the number
   * of trainers: for each, its `limit` creatures after id `afterId`, past `offset`. What a trainer
   * costs is bounded by what its page needs, not by how many creatures it has:
   * - trainers whose `counts` say they have few creatures (at most WINDOW_FACTOR times the
   *   creatures their page walks) are ranked together, by ROW_NUMBER over their creatures (the
   *   cheapest way to answer many small trainers), found by ranges of their ids (idsCondition);
   * - every other trainer (many creatures, or a count not known) is read from its range of the
   *   (trainer_id, id) index with a LIMIT of its own, a branch each, joined by UNION ALL.
   * A count that is out of date (a replica's) only changes which of the two reads a trainer: both
   * give the same page. `fields` (with the id and trainer always read) leaves out the columns
   * nobody asked for: a page of 1,000 creatures spent measurable CPU parsing dates and sizes it
   * then threw away.
   */
  async pagesForTrainers(
    trainerIds: readonly number[],
    { limit, offset = 0, afterId = 0 }: { limit: number; offset?: number; afterId?: number },
    fields: readonly CreatureField[] = CREATURE_FIELDS,
    { mayLag = false, counts }: { mayLag?: boolean; counts?: readonly (number | undefined)[] } = {},
  ): Promise<Creature[][]> {
    if (trainerIds.length === 0) return [];
    const wanted = [...new Set<CreatureField>(['id', 'trainerId', ...fields])];
    const columns = wanted.map((field) => (COLUMN_OF[field] === field ? field : `${COLUMN_OF[field]} AS ${field}`)).join(', ');
    const [first, last] = [Math.trunc(offset), Math.trunc(offset) + Math.trunc(limit)];
    const ranked: number[] = [];
    const ranged: number[] = [];
    trainerIds.forEach((id, i) => {
      const count = counts?.[i];
      (count !== undefined && count <= WINDOW_FACTOR * last ? ranked : ranged).push(id);
    });
    const parts: { sql: string; params: unknown[] }[] = [];
    if (ranked.length > 0) {
      const trainers = idsCondition('trainer_id', ranked);
      parts.push({
        sql: `SELECT ${columns} FROM (SELECT ${wanted.map((field) => COLUMN_OF[field]).join(', ')}, ROW_NUMBER() OVER (PARTITION BY trainer_id ORDER BY id) AS rn FROM creature WHERE ${trainers.sql} AND id > ?) ranked WHERE rn > ${first} AND rn <= ${last}`,
        params: [...trainers.params, afterId],
      });
    }
    for (const id of ranged) {
      parts.push({
        sql: `SELECT ${columns} FROM creature WHERE trainer_id = ? AND id > ? ORDER BY id LIMIT ${last - first} OFFSET ${first}`,
        params: [id, afterId],
      });
    }
    // MySQL takes each part with its ORDER BY and LIMIT in parentheses; SQLite only as a subquery.
    const sql =
      parts.length === 1
        ? parts[0].sql
        : parts.map((part) => (this.sql.isMysql ? `(${part.sql})` : `SELECT * FROM (${part.sql})`)).join(' UNION ALL ');
    const rows = await this.sql.rows<Partial<CreatureRow>>(
      sql,
      parts.flatMap((part) => part.params),
      { mayLag },
    );
    const byTrainer = new Map<number, Creature[]>(trainerIds.map((id) => [id, []]));
    let ordered = true;
    for (const row of rows) {
      const creature = toCreature(row);
      const page = byTrainer.get(creature.trainerId);
      if (!page) continue;
      if (page.length > 0 && page[page.length - 1].id > creature.id) ordered = false;
      page.push(creature);
    }
    // UNION ALL keeps each branch's order in practice, which SQL does not promise.
    if (!ordered) for (const page of byTrainer.values()) page.sort((a, b) => a.id - b.id);
    return trainerIds.map((id) => byTrainer.get(id)!);
  }
}
