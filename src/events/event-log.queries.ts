import { sqlDate, sqlInt, type BatchStatement, type Sql } from '../db/sql';
import type { Chore } from '../common/housekeeping';
import type { CreatureEventKind, CreatureEventMessage } from './creature-event';

/*
 * The kept creature events (table creature_event): every statement about them. A creature
 * write's transaction adds its event (recordStatements); subscribers that resume (`after`) and the
 * bus filling a gap read them by the primary key (trainer, number); pruning walks the index on
 * `at` from where it last stopped (creature_event_pruning), so that nothing it has passed is read
 * again.
 */

/** Each trainer's last events are kept this many at least, however old. */
const KEPT_PER_TRAINER = 1000;
/** Events pruned per statement, and the most statements per prune() call. */
const PRUNE_CHUNK = 500;
const PRUNE_MAX_CHUNKS = 200;
/** Events erased per statement when a trainer is deleted. */
const ERASE_CHUNK = 1000;

interface EventRow {
  seq: number | string;
  kind: CreatureEventKind;
  creatureId: number | string;
  name: string;
  speciesId: number | string;
  level: number | string;
  createdAt: Date | string;
  at: Date | string;
}

interface PruneMark {
  at: Date | string;
  trainerId: number | string;
  seq: number | string;
}

const EVENT_COLUMNS = 'seq, kind, creature_id AS creatureId, name, species_id AS speciesId, level, created_at AS createdAt, at';

export class EventLog {
  constructor(
    private readonly sql: Sql,
    /** Events younger than this are kept, whatever their number (EVENTS_RETENTION). */
    readonly retentionMs: number,
  ) {}

  /**
   * The statements of a creature write's transaction that keep its event: after the statements
   * that numbered it (the trainer's row then holds the number, locked) and, for a creation, right
   * after the creature's INSERT (`creatureId` undefined: the id it was given); for a deletion,
   * before the DELETE. The creature is read as the write left it. Then the trainer's event that
   * has just left its last KEPT_PER_TRAINER goes if it is older than the retention: a trainer
   * keeps no more than it must whatever its pace, for the cost of one lookup by primary key.
   * Nothing is kept when the creature is not the trainer's (the write changed nothing).
   */
  recordStatements(kind: CreatureEventKind, trainerId: number, creatureId: number | undefined, at: Date): BatchStatement[] {
    const inserted = this.sql.isMysql ? 'LAST_INSERT_ID()' : 'last_insert_rowid()';
    return [
      {
        sql: `INSERT INTO creature_event (trainer_id, seq, kind, creature_id, name, species_id, level, created_at, at) SELECT c.trainer_id, t.event_seq, ?, c.id, c.name, c.species_id, c.level, c.created_at, ? FROM creature c JOIN trainer t ON t.id = c.trainer_id WHERE c.id = ${creatureId === undefined ? inserted : '?'} AND c.trainer_id = ?`,
        params: [kind, this.sql.date(at), ...(creatureId === undefined ? [] : [creatureId]), trainerId],
      },
      {
        sql: `DELETE FROM creature_event WHERE trainer_id = ? AND seq = (SELECT event_seq FROM trainer WHERE id = ?) - ${KEPT_PER_TRAINER} AND at < ?`,
        params: [trainerId, trainerId, this.sql.date(new Date(at.getTime() - this.retentionMs))],
      },
    ];
  }

  /** The trainer's kept events numbered above `after` and up to `upTo`, in order, at most `limit`: one range of the primary key. */
  async read(trainerId: number, after: number, upTo: number, limit: number): Promise<CreatureEventMessage[]> {
    const rows = await this.sql.rows<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM creature_event WHERE trainer_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ${Math.trunc(limit)}`,
      [trainerId, after, upTo],
    );
    return rows.map((row) => ({
      kind: row.kind,
      creature: {
        id: sqlInt(row.creatureId),
        name: row.name,
        speciesId: sqlInt(row.speciesId),
        level: sqlInt(row.level),
        trainerId,
        createdAt: sqlDate(row.createdAt).toISOString(),
      },
      at: sqlDate(row.at).toISOString(),
      seq: sqlInt(row.seq),
    }));
  }

  /** The number of the trainer's oldest kept event, null when none is kept. */
  async firstKept(trainerId: number): Promise<number | null> {
    const [row] = await this.sql.rows<{ seq: number | string | null }>('SELECT MIN(seq) AS seq FROM creature_event WHERE trainer_id = ?', [
      trainerId,
    ]);
    return row?.seq === null || row?.seq === undefined ? null : sqlInt(row.seq);
  }

  /** Erases a deleted trainer's events, a stretch of its primary key at a time; how many. */
  async erase(trainerId: number): Promise<number> {
    let erased = 0;
    for (;;) {
      const first = await this.firstKept(trainerId);
      if (first === null) return erased;
      erased += (await this.sql.write('DELETE FROM creature_event WHERE trainer_id = ? AND seq < ?', [trainerId, first + ERASE_CHUNK]))
        .affected;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * Deletes the events that are older than the retention and not among their trainer's last
   * KEPT_PER_TRAINER (or whose trainer is gone), a chunk of the `at` index at a time, from where
   * the last pruning (of any instance) stopped to the retention's edge; how many. Each chunk is two
   * short statements and moves the mark on: an event it keeps (one of its trainer's last) is not
   * read again, and goes when its trainer's later writes push it out (recordStatements). Instances
   * pruning at once delete the same rows, which is harmless.
   */
  async prune(now = new Date()): Promise<number> {
    const edge = this.sql.date(new Date(now.getTime() - this.retentionMs));
    let deleted = 0;
    for (let i = 0; i < PRUNE_MAX_CHUNKS; i += 1) {
      const [mark] = await this.sql.rows<PruneMark>('SELECT at, trainer_id AS trainerId, seq FROM creature_event_pruning WHERE id = 1', []);
      if (!mark) return deleted;
      const from = [this.sql.date(sqlDate(mark.at)), sqlInt(mark.trainerId), sqlInt(mark.seq)];
      const after = '(at > ? OR (at = ? AND (trainer_id > ? OR (trainer_id = ? AND seq > ?))))';
      const afterParams = [from[0], from[0], from[1], from[1], from[2]];
      const chunk = await this.sql.rows<PruneMark>(
        `SELECT at, trainer_id AS trainerId, seq FROM creature_event WHERE ${after} AND at < ? ORDER BY at, trainer_id, seq LIMIT ${PRUNE_CHUNK}`,
        [...afterParams, edge],
      );
      if (chunk.length === 0) return deleted;
      const last = chunk[chunk.length - 1];
      const to = [this.sql.date(sqlDate(last.at)), sqlInt(last.trainerId), sqlInt(last.seq)];
      const upTo = '(at < ? OR (at = ? AND (trainer_id < ? OR (trainer_id = ? AND seq <= ?))))';
      deleted += (
        await this.sql.write(
          `DELETE FROM creature_event WHERE ${after} AND ${upTo} AND (NOT EXISTS (SELECT 1 FROM trainer t WHERE t.id = creature_event.trainer_id) OR seq <= (SELECT event_seq FROM trainer t WHERE t.id = creature_event.trainer_id) - ${KEPT_PER_TRAINER})`,
          [...afterParams, to[0], to[0], to[1], to[1], to[2]],
        )
      ).affected;
      // Never back: an instance that pruned further meanwhile keeps its mark.
      await this.sql.write(
        'UPDATE creature_event_pruning SET at = ?, trainer_id = ?, seq = ? WHERE id = 1 AND (at < ? OR (at = ? AND (trainer_id < ? OR (trainer_id = ? AND seq < ?))))',
        [...to, to[0], to[0], to[1], to[1], to[2]],
      );
      if (chunk.length < PRUNE_CHUNK) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return deleted;
  }
}

/** Pruning the kept events, on each instance every minute (see EventLog.prune). */
export const eventPruning = (log: EventLog): Chore => ({
  label: 'pruning kept creature events',
  run: () => log.prune(),
  firstMs: 20_000,
  everyMs: 60_000,
});
