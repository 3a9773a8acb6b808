import type { DataSource } from 'typeorm';
import { isForeignKeyViolation, uniqueViolation } from '../../src/db/errors';
import { idsCondition, type Sql } from '../../src/db/sql';
import { AppError } from '../../src/errors';
import { Team } from '../../src/trainers/team';
import { TrainerQueries } from '../../src/trainers/trainer.queries';
import { openTestDatabase, type TestDatabase } from '../helpers/database';

/*
 * Sql, where every statement of the app passes, on a real SQLite file: batches as transactions
 * (what each statement gave, all or nothing), the one connection shared with statements issued
 * while a batch is open, lock conflicts with another connection tried again and then refused as
 * SERVICE_UNAVAILABLE, and foreign keys off for one batch only.
 */

/** Whatever `promise` rejected with (it must reject). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const NOTE = 'CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT NOT NULL UNIQUE)';

/** The lock conflicts a Sql met, as its metrics count them (db_lock_conflicts_total). */
async function conflictsOf(sql: Sql): Promise<{ retried: number; gaveUp: number }> {
  const { values } = await sql.metrics.lockConflicts.get();
  const count = (outcome: string) => values.find((value) => value.labels.outcome === outcome)?.value ?? 0;
  return { retried: count('retried'), gaveUp: count('gave_up') };
}

describe('Sql.batch on SQLite', () => {
  let db: TestDatabase;
  let sql: Sql;

  beforeEach(async () => {
    db = await openTestDatabase();
    sql = db.sql;
    await db.dataSource.query(NOTE);
  });
  afterEach(async () => db?.close());

  const bodies = async () => (await sql.rows<{ body: string }>('SELECT body FROM note ORDER BY id', [])).map((row) => row.body);

  it('gives what each statement gave: the rows of a SELECT or RETURNING, what a write changed, the id of a new row', async () => {
    const results = await sql.batch([
      { sql: 'INSERT INTO note (body) VALUES (?)', params: ['a'] },
      { sql: 'INSERT INTO note (body) VALUES (?), (?)', params: ['b', 'c'] },
      { sql: 'SELECT body FROM note WHERE body > ? ORDER BY id', params: ['a'] },
      { sql: "UPDATE note SET body = body || '!' WHERE body <> ? RETURNING body", params: ['c'] },
      { sql: 'DELETE FROM note WHERE body = ?', params: ['c'] },
      { sql: 'DELETE FROM note WHERE body = ?', params: ['nothing'] },
    ]);
    expect(results.map(({ rows, affected }) => ({ rows, affected }))).toEqual([
      { rows: [], affected: 1 },
      { rows: [], affected: 2 },
      { rows: [{ body: 'b' }, { body: 'c' }], affected: 2 },
      { rows: [{ body: 'a!' }, { body: 'b!' }], affected: 2 },
      { rows: [], affected: 1 },
      { rows: [], affected: 0 },
    ]);
    expect(results[0].insertId).toBe(1);
    expect(results[1].insertId).toBe(3);
    expect(await bodies()).toEqual(['a!', 'b!']);
  });

  it('undoes the whole batch when one statement fails, throws that statement’s error, and runs the next batch', async () => {
    await sql.write('INSERT INTO note (body) VALUES (?)', ['kept']);
    const error = await rejection(
      sql.batch([
        { sql: 'INSERT INTO note (body) VALUES (?)', params: ['a'] },
        { sql: 'UPDATE note SET body = ? WHERE body = ?', params: ['changed', 'kept'] },
        { sql: 'INSERT INTO note (body) VALUES (?)', params: ['a'] },
        { sql: 'INSERT INTO note (body) VALUES (?)', params: ['never'] },
      ]),
    );
    expect(uniqueViolation(error)).toBe('body');
    expect(await bodies()).toEqual(['kept']);
    // Nothing of the failed transaction is left open on the one connection.
    await sql.batch([{ sql: 'INSERT INTO note (body) VALUES (?)', params: ['next'] }]);
    expect(await bodies()).toEqual(['kept', 'next']);
  });

  it('runs what the process asks while a batch is open after it, never inside it (nor in its rollback)', async () => {
    const failing = rejection(
      sql.batch([
        { sql: 'INSERT INTO note (body) VALUES (?)', params: ['in the batch'] },
        { sql: 'INSERT INTO note (body) VALUES (?)', params: ['in the batch'] },
      ]),
    );
    // Issued while the batch is open (it has not yet sent its first statement).
    const written = sql.write('INSERT INTO note (body) VALUES (?)', ['beside']);
    const read = sql.rows<{ n: number }>('SELECT COUNT(*) AS n FROM note', []);
    expect(uniqueViolation(await failing)).toBe('body');
    expect((await written).affected).toBe(1);
    // After the batch, in the order they were asked: the write, then the read (which sees it, and nothing of the batch).
    expect(await read).toEqual([{ n: 1 }]);
    expect(await bodies()).toEqual(['beside']);
    const rollback = db.statements.indexOf('ROLLBACK');
    expect(rollback).toBeGreaterThan(-1);
    expect(db.statements.slice(rollback + 1)).toEqual(
      expect.arrayContaining(['INSERT INTO note (body) VALUES (?)', 'SELECT COUNT(*) AS n FROM note']),
    );
  });
});

describe('Sql: lock conflicts with another connection (SQLITE_BUSY)', () => {
  let db: TestDatabase;
  let other: DataSource;

  /** The database with a policy of `attempts` tries and short waits, and another connection that holds its write lock. */
  const open = async (attempts: number) => {
    db = await openTestDatabase({ retry: { attempts, baseMs: 20, capMs: 50 } });
    await db.dataSource.query(NOTE);
    other = await db.connect();
    await other.query('BEGIN IMMEDIATE');
  };
  afterEach(async () => {
    if (other?.isInitialized) await other.query('ROLLBACK').catch(() => undefined);
    await db?.close();
  });

  it('tries a batch and a write again until the other connection lets go, then they go through', async () => {
    await open(20);
    // The first tries wait out SQLite's busy timeout (250 ms) on the event loop: the lock goes between two of them.
    setTimeout(() => void other.query('ROLLBACK'), 50);
    const [inserted] = await db.sql.batch([{ sql: 'INSERT INTO note (body) VALUES (?)', params: ['after the lock'] }]);
    expect(inserted.affected).toBe(1);
    expect((await conflictsOf(db.sql)).retried).toBeGreaterThanOrEqual(1);
    expect((await conflictsOf(db.sql)).gaveUp).toBe(0);

    await other.query('BEGIN IMMEDIATE');
    const retried = (await conflictsOf(db.sql)).retried;
    setTimeout(() => void other.query('ROLLBACK'), 50);
    expect((await db.sql.write('INSERT INTO note (body) VALUES (?)', ['written'])).affected).toBe(1);
    expect((await conflictsOf(db.sql)).retried).toBeGreaterThan(retried);
    expect(await db.sql.rows('SELECT body FROM note ORDER BY id', [])).toEqual([{ body: 'after the lock' }, { body: 'written' }]);
  });

  it('after the last try, answers SERVICE_UNAVAILABLE with Retry-After, and the next statement finds the connection free', async () => {
    await open(3);
    const error = await rejection(db.sql.batch([{ sql: 'INSERT INTO note (body) VALUES (?)', params: ['never'] }]));
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfter: 1, cause: { code: 'SQLITE_BUSY' } });
    expect(await conflictsOf(db.sql)).toEqual({ retried: 2, gaveUp: 1 });
    expect(db.statements.filter((statement) => statement === 'BEGIN IMMEDIATE')).toHaveLength(3);

    expect(await rejection(db.sql.write('INSERT INTO note (body) VALUES (?)', ['never']))).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryAfter: 1,
    });
    expect(await conflictsOf(db.sql)).toEqual({ retried: 4, gaveUp: 2 });

    await other.query('ROLLBACK');
    await db.sql.batch([{ sql: 'INSERT INTO note (body) VALUES (?)', params: ['now'] }]);
    expect(await db.sql.rows('SELECT body FROM note', [])).toEqual([{ body: 'now' }]);
  });
});

describe('Sql.batch withoutForeignKeys', () => {
  let db: TestDatabase;
  let trainerIds: number[];

  beforeEach(async () => {
    db = await openTestDatabase({ retry: { attempts: 2, baseMs: 10, capMs: 10 } });
    const queries = new TrainerQueries(db.sql);
    trainerIds = [];
    for (const n of [1, 2]) {
      trainerIds.push(
        await queries.insert({
          nickname: `fk_${n}`,
          nicknameKey: `fk_${n}`,
          firstName: 'F',
          lastName: 'K',
          email: `fk_${n}@example.test`,
          passwordHash: 'x',
          team: Team.VALOR,
          createdAt: new Date(),
        }),
      );
      await addCreature(trainerIds[trainerIds.length - 1], `c${n}`);
    }
  });
  afterEach(async () => db?.close());

  const addCreature = (trainerId: number, name: string) =>
    db.sql.write(
      "INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES (?, ?, 1, 1, ?, '2026-01-01 00:00:00.000')",
      [name, name, trainerId],
    );
  const creaturesOf = async (trainerId: number) =>
    (await db.sql.rows<{ n: number }>('SELECT COUNT(*) AS n FROM creature WHERE trainer_id = ?', [trainerId]))[0].n;
  const foreignKeysOn = async () => (await db.sql.rows<{ foreign_keys: number }>('PRAGMA foreign_keys', []))[0].foreign_keys === 1;

  /** Foreign keys hold again: an orphan is refused, and deleting a trainer takes its creatures (ON DELETE CASCADE). */
  const expectForeignKeysBack = async () => {
    expect(await foreignKeysOn()).toBe(true);
    expect(isForeignKeyViolation(await rejection(addCreature(999_999, 'orphan')))).toBe(true);
    await db.sql.write('DELETE FROM trainer WHERE id = ?', [trainerIds[1]]);
    expect(await creaturesOf(trainerIds[1])).toBe(0);
  };

  it('deletes a parent and leaves its children for later, and foreign keys hold again after the batch', async () => {
    await db.sql.batch([{ sql: 'DELETE FROM trainer WHERE id = ?', params: [trainerIds[0]] }], { withoutForeignKeys: true });
    expect(await creaturesOf(trainerIds[0])).toBe(1);
    await expectForeignKeysBack();
  });

  it('turns foreign keys on again when a statement of the batch fails', async () => {
    const error = await rejection(
      db.sql.batch(
        [
          { sql: 'DELETE FROM trainer WHERE id = ?', params: [trainerIds[0]] },
          { sql: 'INSERT INTO trainer_count (bucket, team, n) VALUES (?, ?, ?)', params: [0, Team.VALOR, 1] },
        ],
        { withoutForeignKeys: true },
      ),
    );
    expect(uniqueViolation(error)).toBeDefined();
    expect(await db.sql.rows('SELECT id FROM trainer WHERE id = ?', [trainerIds[0]])).toHaveLength(1);
    await expectForeignKeysBack();
  });

  it('turns foreign keys on again when the batch never got the lock', async () => {
    const other = await db.connect();
    await other.query('BEGIN IMMEDIATE');
    try {
      const error = await rejection(
        db.sql.batch([{ sql: 'DELETE FROM trainer WHERE id = ?', params: [trainerIds[0]] }], { withoutForeignKeys: true }),
      );
      expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    } finally {
      await other.query('ROLLBACK');
    }
    expect(await creaturesOf(trainerIds[0])).toBe(1);
    await expectForeignKeysBack();
  });
});

describe('idsCondition', () => {
  it('reads runs of consecutive ids as ranges and the ids alone in one IN list, each id once', () => {
    expect(idsCondition('trainer_id', [7, 2, 3, 4, 10, 9, 3, 12])).toEqual({
      sql: '(trainer_id BETWEEN ? AND ? OR trainer_id BETWEEN ? AND ? OR trainer_id IN (?, ?))',
      params: [2, 4, 9, 10, 7, 12],
    });
    expect(idsCondition('id', [5, 6, 7])).toEqual({ sql: 'id BETWEEN ? AND ?', params: [5, 7] });
    expect(idsCondition('id', [8, 1])).toEqual({ sql: 'id IN (?, ?)', params: [1, 8] });
  });
});
