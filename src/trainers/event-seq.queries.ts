import { sqlInt, type BatchResult, type BatchStatement } from '../db/sql';

/*
 * What a creature write's batch does to its trainer's row: the next event number (event_seq) and
 * the count of its creatures (creatures_owned). A file of its own, so that creature.queries.ts
 * needs nothing of trainer.queries.ts (which uses creature.queries.ts for the creatures a
 * deletion leaves): no import cycle between the two.
 */

/**
 * The trainer table for a write of rows by id: on MySQL/MariaDB through the primary key. Left to
 * choose, MariaDB updates a row by id through IX_trainer_id (an index on the id alone, a range
 * where a SELECT takes the primary key as a constant), locking the index's entry before the row;
 * a write that had locked the row first (SELECT ... FOR UPDATE) and then wanted the entry
 * deadlocked with it (a trainer's creature create and another's delete, at once).
 */
export const trainerRows = (isMysql: boolean): string => (isMysql ? 'trainer FORCE INDEX (PRIMARY)' : 'trainer');

/**
 * The statements of a creature write's batch (see CreatureQueries) that count one more creature
 * event of the trainer, to come first in the batch; with `creatureId`, only if the trainer still
 * has that creature. They lock the trainer's row until the batch commits, so the trainer's
 * writes commit in the order of their numbers. eventSeqOf reads the number from what the last of
 * them gave (null: nothing counted). `owned` (+1 for a create, -1 for a delete) changes the
 * trainer's creatures_owned in the same transaction: it stays the number of its creature rows.
 */
export function nextEventSeqStatements(isMysql: boolean, trainerId: number, creatureId?: number, owned: -1 | 0 | 1 = 0): BatchStatement[] {
  const guard = creatureId === undefined ? '' : ' AND EXISTS (SELECT 1 FROM creature WHERE id = ? AND trainer_id = ?)';
  const params = [owned, ...(creatureId === undefined ? [trainerId] : [trainerId, creatureId, trainerId])];
  if (!isMysql) {
    // BEGIN IMMEDIATE already holds the whole database.
    return [
      {
        sql: `UPDATE trainer SET creatures_owned = creatures_owned + ?, event_seq = event_seq + 1 WHERE id = ?${guard} RETURNING event_seq AS seq`,
        params,
      },
    ];
  }
  return [
    // The trainer's row first: MariaDB may read the creature in the guard before the row it
    // updates, and two writes of one creature then deadlocked (seen under concurrent update + delete).
    ...(creatureId === undefined ? [] : [{ sql: 'SELECT id FROM trainer WHERE id = ? FOR UPDATE', params: [trainerId] }]),
    // LAST_INSERT_ID(expr) hands the new value back in the UPDATE's own answer.
    {
      sql: `UPDATE ${trainerRows(true)} SET creatures_owned = creatures_owned + ?, event_seq = LAST_INSERT_ID(event_seq + 1) WHERE id = ?${guard}`,
      params,
    },
  ];
}

export function eventSeqOf(isMysql: boolean, result: BatchResult): number | null {
  if (result.affected === 0) return null;
  return isMysql ? result.insertId : sqlInt((result.rows[0] as { seq: number | string }).seq);
}
