import { randomBytes } from 'node:crypto';
import { endSessionsStatement, liveSessionsColumn, parseLiveSessions, sessionOpen } from '../auth/session.queries';
import { creaturesRead, leftCreatures } from '../creatures/creature.queries';
import type { Creature } from '../creatures/creature.entity';
import { placeholders, sqlInt, type BatchStatement, type Sql } from '../db/sql';
import type { Team } from './team';
import { trainerRows } from './event-seq.queries';
import {
  INSERTED_COLUMNS,
  PROFILE_COLUMNS,
  TRAINER_COLUMNS,
  trainerOf,
  type InsertedProperty,
  type ProfileProperty,
  type TrainerField,
  type TrainerRow,
} from './trainer.columns';
import type { Trainer } from './trainer.entity';
import type { TrainerConditions } from './trainer-filter';

/*
 * Every statement about the trainer table. Services call these; nothing else writes SQL for
 * trainers. The public columns are named in trainer.columns.ts, whose table the reads' column
 * lists and the writes' public columns come from; the stored-only ones (nickname_key,
 * password_hash, event_seq) here. A new column: see trainer.columns.ts.
 */

/** A row to insert: the stored forms (normalised names, lower-cased email and nickname key, the hash). */
export type NewTrainerRow = { readonly [P in InsertedProperty]: Trainer[P] } & {
  readonly nicknameKey: string;
  readonly passwordHash: string;
};

/**
 * A public column in a read's column list (TRAINER_COLUMNS): under its property's name
 * (`t.first_name AS firstName`), the name its row's value has (TrainerRow).
 */
const selected = (column: { readonly sql: string; readonly property: string }): string =>
  column.sql === column.property ? `t.${column.sql}` : `t.${column.sql} AS ${column.property}`;

/** A read of whole trainers: every public column but the count. */
const COLUMNS = TRAINER_COLUMNS.filter((column) => column.read !== 'count')
  .map(selected)
  .join(', ');

/** Each property of a trainer as a read selects it (COLUMN_OF[field], for the reads of some fields). */
const COLUMN_OF: Readonly<Record<string, string>> = Object.fromEntries(
  TRAINER_COLUMNS.map((column) => [column.property, selected(column)]),
);

/**
 * The count, for the reads that ask for it: kept by every creature create and delete
 * (nextEventSeqStatements, event-seq.queries.ts), recounted by `npm run reconcile` (ReconcileQueries).
 */
const CREATURE_COUNT = COLUMN_OF.creaturesOwned;

/** The public columns a registration's INSERT writes (with nickname_key and password_hash). */
const INSERTED_NAMES = INSERTED_COLUMNS.map((column) => column.sql).join(', ');

/** Trainers read by id, and the open sessions of those asked about (the callers). */
export interface TrainersById {
  readonly trainers: Map<number, Trainer>;
  readonly liveSessions: Map<number, readonly number[]>;
}

/**
 * The trainer table for reads by id and id range. On MySQL/MariaDB the primary key is named: left
 * to choose, the optimizer also weighs IX_trainer_id and estimates every range on both indexes
 * (two index dives per range and index), for the same plan. For a merged read of 10 REST pages,
 * MariaDB's range estimates were about a fifth of its CPU (perf); see bench/README.
 */
const byIdFrom = (isMysql: boolean): string => (isMysql ? 'trainer t FORCE INDEX (PRIMARY)' : 'trainer t');

/** List lengths the merged read is prepared for (see mergedRead); longer lists are sent as they are. */
const SHAPES = [1, 4, 16, 64, 256, 1024];
/** Never an id (ids start at 1): pads lists up to their shape. */
const NO_ID = 0;

/** `values` padded to the next length of `shapes` with `pad`, and whether it fits one. */
function shaped<T>(values: readonly T[], pad: T, shapes = SHAPES): { values: T[]; fits: boolean } {
  const length = shapes.find((n) => n >= values.length);
  if (length === undefined) return { values: [...values], fits: false };
  const padded = [...values];
  while (padded.length < length) padded.push(pad);
  return { values: padded, fits: true };
}

/**
 * The merged read of TrainerService as one SELECT: the trainers by id, with their counts and the
 * callers' open sessions. Its lists are padded to a few lengths (with an id that never exists),
 * so the statement takes a handful of shapes and can be prepared: MySQL then sends binary rows,
 * which mysql2 parses with less CPU than text. The same text runs on SQLite.
 */
function mergedRead(
  ids: readonly number[],
  callers: readonly number[],
  now: Date | string,
  isMysql: boolean,
): { sql: string; params: unknown[]; prepared: boolean } {
  const idList = shaped(ids, NO_ID);
  const callerList = shaped(callers, NO_ID);
  const sql =
    `SELECT ${COLUMNS}, ${CREATURE_COUNT}, ${liveSessionsColumn(callerList.values.length)} AS liveSessions` +
    ` FROM ${byIdFrom(isMysql)} WHERE t.id IN (${placeholders(idList.values.length)})`;
  return { sql, params: [...callerList.values, now, ...idList.values], prepared: idList.fits && callerList.fits };
}

/** Ids live in buckets of this many for trainer_count (see the ListsByIndex migration). */
const COUNT_BUCKET = 65536;
/**
 * MySQL: the slot of trainer_count a write counts in (see the CountSlots migration): the offset of
 * the server's ids, its own on each node of a Galera cluster, so writes through different nodes
 * change different rows and the cluster does not refuse them as conflicting; 1 on a server alone.
 * SQLite: slot 1, the column's default.
 */
const COUNT_SLOT = '@@auto_increment_offset';

/** Above every character of the nickname alphabet: `text` and this bound every suffix that starts with `text`. */
const AFTER_ALPHABET = '~';

/** Positions 1..31 in a nickname key, where its suffixes of two characters or more start. */
const POSITIONS = Array.from({ length: 31 }, (_, i) => `SELECT ${i + 1} AS n`).join(' UNION ALL ');

/**
 * The statement that writes into trainer_nickname_suffix the suffixes of the trainers that
 * `which` selects (a condition on `t.id`), from their nickname keys as the database holds them.
 */
const suffixesOf = (isMysql: boolean, which: string): string =>
  isMysql
    ? `INSERT INTO trainer_nickname_suffix (suffix, trainer_id) SELECT SUBSTRING(t.nickname_key, p.n), t.id FROM trainer t JOIN (${POSITIONS}) p ON p.n < CHAR_LENGTH(t.nickname_key) WHERE ${which}`
    : `INSERT INTO trainer_nickname_suffix (suffix, trainer_id) SELECT substr(t.nickname_key, p.n), t.id FROM trainer t JOIN (${POSITIONS}) p ON p.n < length(t.nickname_key) WHERE ${which}`;

/**
 * Where a page of trainers comes from and what it must match: `t` is the trainer table, or with
 * `nicknameContains` the trainers whose key has a suffix starting with the text (one range of
 * trainer_nickname_suffix's primary key, as long as the matches), read first and then joined.
 */
function matching(conditions: TrainerConditions, afterId: number): { from: string; where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  let from = 'trainer t';
  if (conditions.nicknameContains !== undefined) {
    const text = conditions.nicknameContains.toLowerCase();
    // DISTINCT: a key holds the text at more than one place; it also keeps the matches a table of their own.
    from =
      '(SELECT DISTINCT s.trainer_id AS id FROM trainer_nickname_suffix s WHERE s.suffix >= ? AND s.suffix < ? AND s.trainer_id > ?) m' +
      ' JOIN trainer t ON t.id = m.id';
    params.push(text, `${text}${AFTER_ALPHABET}`, afterId);
  } else {
    where.push('t.id > ?');
    params.push(afterId);
  }
  if (conditions.nickname !== undefined) {
    where.push('t.nickname_key = ?');
    params.push(conditions.nickname.toLowerCase());
  }
  if (conditions.team !== undefined) {
    where.push('t.team = ?');
    params.push(conditions.team);
  }
  return { from, where, params };
}

/** What a profile change writes (the stored forms); a property left out stays as it is. */
export type TrainerChangeRow = { readonly [P in ProfileProperty]?: Trainer[P] } & { readonly nicknameKey?: string };

/**
 * What a password sent to prove who is asking was checked against: the trainer's stored hash as
 * it was read, and the caller's session. The write it allows happens only if both still hold.
 */
export interface PasswordProof {
  readonly passwordHash: string;
  readonly sessionId: number;
}

/** What a trainer's deletion removed at once: the trainer as it was, its last creature event's number, its sessions. */
export interface DeletedAccount {
  /** The trainer as it was. */
  readonly trainer: Trainer;
  readonly lastSeq: number;
  readonly sessions: number;
}

/** A condition that holds while `hash` is the trainer's stored password hash (for statements after a replaceHash). */
const hashIs = (id: number, hash: string): BatchStatement => ({
  sql: 'EXISTS (SELECT 1 FROM trainer WHERE id = ? AND password_hash = ?)',
  params: [id, hash],
});

export class TrainerQueries {
  constructor(private readonly sql: Sql) {}

  /**
   * Inserts a trainer and returns its id; the unique indexes on email and nickname key decide
   * duplicates. In the same transaction, its nickname's suffixes (for nicknameContains) and one
   * more trainer of its team in its id's bucket of trainer_count: lists and counts see it at once,
   * on every instance.
   */
  async insert(row: NewTrainerRow): Promise<number> {
    const newId = this.sql.isMysql ? 'LAST_INSERT_ID()' : 'last_insert_rowid()';
    const [inserted] = await this.sql.batch([
      {
        sql: `INSERT INTO trainer (${INSERTED_NAMES}, nickname_key, password_hash) VALUES (${placeholders(INSERTED_COLUMNS.length + 2)})`,
        params: [
          ...INSERTED_COLUMNS.map(({ property }) => {
            const value = row[property];
            return value instanceof Date ? this.sql.date(value) : value;
          }),
          row.nicknameKey,
          row.passwordHash,
        ],
      },
      // The suffix and count tables have no row ids of their own (WITHOUT ROWID on SQLite), so the new id stays the trainer's.
      { sql: suffixesOf(this.sql.isMysql, `t.id = ${newId}`), params: [] },
      {
        sql: this.sql.isMysql
          ? `INSERT INTO trainer_count (bucket, team, slot, n) VALUES (${newId} DIV ${COUNT_BUCKET}, ?, ${COUNT_SLOT}, 1) ON DUPLICATE KEY UPDATE n = n + 1`
          : `INSERT INTO trainer_count (bucket, team, n) VALUES (${newId} / ${COUNT_BUCKET}, ?, 1) ON CONFLICT (bucket, team, slot) DO UPDATE SET n = n + 1`,
        params: [row.team],
      },
    ]);
    return inserted.insertId;
  }

  /** Whether reads that may lag can go to a read replica (else they are the primary's anyway). */
  get hasReplicas(): boolean {
    return this.sql.hasReplicas;
  }

  /**
   * Changes a trainer's profile in one transaction, and reads it back as it now is (with its
   * count); null when there is no such trainer. The trainer's row is locked first. A new
   * nickname replaces its suffixes (nicknameContains); the unique nickname key decides
   * duplicates (the error is thrown). A new team moves the trainer from its old team's row of
   * trainer_count to the new team's, in one statement, in the order of the teams' names (two
   * trainers swapping teams lock the two rows in the same order), near the end of the
   * transaction, so that those shared rows are held for as little as possible.
   */
  async updateProfile(id: number, change: TrainerChangeRow): Promise<Trainer | null> {
    const set: string[] = [];
    const values: unknown[] = [];
    // The team has a statement of its own (below), which moves its count.
    for (const [column, value] of [
      ...PROFILE_COLUMNS.filter(({ property }) => property !== 'team').map(({ sql, property }) => [sql, change[property]] as const),
      ['nickname_key', change.nicknameKey] as const,
    ]) {
      if (value === undefined) continue;
      set.push(`${column} = ?`);
      values.push(value);
    }
    const statements: BatchStatement[] = [
      { sql: `SELECT id FROM trainer WHERE id = ?${this.sql.isMysql ? ' FOR UPDATE' : ''}`, params: [id] },
    ];
    if (set.length > 0)
      statements.push({ sql: `UPDATE ${trainerRows(this.sql.isMysql)} SET ${set.join(', ')} WHERE id = ?`, params: [...values, id] });
    if (change.nicknameKey !== undefined) {
      statements.push(
        { sql: 'DELETE FROM trainer_nickname_suffix WHERE trainer_id = ?', params: [id] },
        { sql: suffixesOf(this.sql.isMysql, 't.id = ?'), params: [id] },
      );
    }
    if (change.team !== undefined) {
      // +1 for the new team and -1 for the trainer's team as its row holds it, when they differ.
      const moves = (slot: string) =>
        `SELECT ? AS bucket, m.team, ${slot}, m.d FROM (SELECT ? AS team, 1 AS d UNION ALL SELECT team, -1 FROM trainer WHERE id = ?) m` +
        ' WHERE EXISTS (SELECT 1 FROM trainer WHERE id = ? AND team <> ?)';
      statements.push(
        {
          sql: this.sql.isMysql
            ? `INSERT INTO trainer_count (bucket, team, slot, n) ${moves(COUNT_SLOT)} ORDER BY m.team ON DUPLICATE KEY UPDATE n = n + VALUES(n)`
            : `INSERT INTO trainer_count (bucket, team, slot, n) ${moves('1')} ON CONFLICT (bucket, team, slot) DO UPDATE SET n = n + excluded.n`,
          params: [Math.floor(id / COUNT_BUCKET), change.team, id, id, change.team],
        },
        { sql: `UPDATE ${trainerRows(this.sql.isMysql)} SET team = ? WHERE id = ?`, params: [change.team, id] },
      );
    }
    statements.push({ sql: `SELECT ${COLUMNS}, ${CREATURE_COUNT} FROM trainer t WHERE t.id = ?`, params: [id] });
    const results = await this.sql.batch(statements, { readCommitted: true });
    const row = results[results.length - 1].rows[0] as TrainerRow | undefined;
    return row ? trainerOf(row) : null;
  }

  /**
   * The stored password hash of a trainer while the session `sessionId` of it is open (null when
   * there is no such trainer or the session has ended): for checking a password it sends. What
   * the password then allows is written only if this hash is still the stored one (see PasswordProof).
   */
  async passwordHash(id: number, sessionId: number): Promise<string | null> {
    const open = sessionOpen(id, sessionId, this.sql.date(new Date()));
    const [row] = await this.sql.rows<{ passwordHash: string }>(
      `SELECT password_hash AS passwordHash FROM trainer WHERE id = ? AND ${open.sql}`,
      [id, ...open.params],
    );
    return row?.passwordHash ?? null;
  }

  /**
   * Sets a trainer's password hash and ends every session of the trainer but the caller's, in one
   * transaction, only if `proof` still holds at the write (the hash the current password was
   * checked against is the stored one, the caller's session is open); how many sessions ended,
   * or null when nothing was written (the trainer is gone, its password changed or the session
   * ended meanwhile). Of two changes checked against the same hash, the first to write wins:
   * the other finds another hash (MySQL: once the first commits, as its UPDATE waits for the
   * row's lock and then reads the row as committed). The sessions are ended only where the new
   * hash is in place, since MySQL runs the batch as one query and cannot stop after a miss.
   */
  async changePassword(id: number, passwordHash: string, proof: PasswordProof): Promise<number | null> {
    const [updated, ended] = await this.sql.batch([
      this.replaceHash(id, passwordHash, proof),
      endSessionsStatement(id, proof.sessionId, hashIs(id, passwordHash)),
    ]);
    return updated.affected === 0 ? null : ended.affected;
  }

  /**
   * Deletes a trainer with its sessions, its nickname's suffixes and its place in trainer_count,
   * in one short transaction; the trainer as it was, or null when nothing was deleted (no such
   * trainer, or `proof` no longer holds). Its creatures stay behind, for removeLeftCreatures to
   * take a stretch at a time (the foreign key's ON DELETE CASCADE, off for this transaction, would
   * remove them all in one statement: on SQLite, whose statements run on the event loop, that
   * held every other request of the process for as long as the trainer had creatures to read and
   * delete; on MySQL, their rows arrived as one answer to parse). No read shows them once
   * the trainer is gone (CreatureQueries.byId; lists and counts start from the trainer).
   *
   * The first statement claims the trainer's row: it replaces its password hash by a mark of
   * this deletion, only if `proof` holds (the checked hash is the stored one and the caller's
   * session is open), and locks the row, so the trainer's creature writes and password changes
   * (which lock it too) wait and then find it gone. Every later statement acts only where the
   * mark is (MySQL runs the batch as one query and cannot stop after a miss): without the claim,
   * nothing changes. Every statement touches only this trainer's rows by its own index ranges, at
   * READ COMMITTED on MySQL (no gap locks), and the one shared row, its team's count, comes last,
   * held only until the commit.
   */
  async deleteAccount(id: number, proof?: PasswordProof): Promise<DeletedAccount | null> {
    // Never a stored hash (not the scrypt form), and this deletion's own.
    const mark = `deleting$${randomBytes(12).toString('base64url')}`;
    const claimed = hashIs(id, mark);
    const [, locked, sessions, , , deleted] = await this.sql.batch(
      [
        this.replaceHash(id, mark, proof),
        { sql: `SELECT ${COLUMNS}, t.event_seq AS seq FROM trainer t WHERE t.id = ? AND t.password_hash = ?`, params: [id, mark] },
        endSessionsStatement(id, undefined, claimed),
        { sql: `DELETE FROM trainer_nickname_suffix WHERE trainer_id = ? AND ${claimed.sql}`, params: [id, ...claimed.params] },
        {
          sql: this.sql.isMysql
            ? `INSERT INTO trainer_count (bucket, team, slot, n) SELECT ?, team, ${COUNT_SLOT}, -1 FROM trainer WHERE id = ? AND password_hash = ? ON DUPLICATE KEY UPDATE n = n - 1`
            : 'INSERT INTO trainer_count (bucket, team, n) SELECT ?, team, -1 FROM trainer WHERE id = ? AND password_hash = ? ON CONFLICT (bucket, team, slot) DO UPDATE SET n = n - 1',
          params: [Math.floor(id / COUNT_BUCKET), id, mark],
        },
        { sql: 'DELETE FROM trainer WHERE id = ? AND password_hash = ?', params: [id, mark] },
      ],
      { readCommitted: true, withoutForeignKeys: true },
    );
    const row = locked.rows[0] as (TrainerRow & { seq: number | string }) | undefined;
    if (!row || deleted.affected === 0) return null;
    return { trainer: trainerOf(row), lastSeq: sqlInt(row.seq), sessions: sessions.affected };
  }

  /**
   * The statement that puts `hash` in place of a trainer's password hash: only if `proof` holds
   * when it is written (the hash the password was checked against is still the stored one, the
   * caller's session is open); without a proof (an operator's deletion), unconditionally.
   */
  private replaceHash(id: number, hash: string, proof: PasswordProof | undefined): BatchStatement {
    if (proof === undefined)
      return { sql: `UPDATE ${trainerRows(this.sql.isMysql)} SET password_hash = ? WHERE id = ?`, params: [hash, id] };
    const open = sessionOpen(id, proof.sessionId, this.sql.date(new Date()));
    return {
      sql: `UPDATE ${trainerRows(this.sql.isMysql)} SET password_hash = ? WHERE id = ? AND password_hash = ? AND ${open.sql}`,
      params: [hash, id, proof.passwordHash, ...open.params],
    };
  }

  /**
   * Removes up to `limit` of the creatures a deleted trainer left behind (see deleteAccount),
   * after `afterId`, oldest first, and returns them (as they were, for their DELETED events):
   * two short statements on the trainer's index range. None when all are gone.
   */
  async removeLeftCreatures(trainerId: number, afterId: number, limit: number): Promise<Creature[]> {
    const left = leftCreatures(trainerId, afterId, limit);
    const creatures = creaturesRead(await this.sql.rows(left.read.sql, left.read.params));
    if (creatures.length > 0) {
      const remove = left.remove(creatures[creatures.length - 1].id);
      await this.sql.write(remove.sql, remove.params);
    }
    return creatures;
  }

  /**
   * Trainers by id, with their creature counts when `withCounts`, and the open sessions of those
   * in `callers` (the caller check: a logged-out session's access tokens stop working without a
   * statement of their own), in one statement (mergedRead).
   */
  async byIds(
    ids: readonly number[],
    withCounts: boolean,
    callers: readonly number[] = [],
    { mayLag = false } = {},
  ): Promise<TrainersById> {
    const read = mergedRead(ids, callers, this.sql.date(new Date()), this.sql.isMysql);
    const rows = await this.sql.rows<TrainerRow & { liveSessions?: string | Buffer | null }>(read.sql, read.params, {
      prepared: read.prepared,
      mayLag,
    });
    const trainers = new Map<number, Trainer>();
    const liveSessions = new Map<number, readonly number[]>();
    for (const row of rows) {
      if (!withCounts) row.creaturesOwned = undefined;
      const trainer = trainerOf(row);
      trainers.set(trainer.id, trainer);
      if (callers.length > 0) liveSessions.set(trainer.id, parseLiveSessions(row.liveSessions));
    }
    return { trainers, liveSessions };
  }

  /**
   * Up to `limit` trainers matching `conditions` with ids above `afterId` (0: from the first),
   * skipping `offset` of them, in id order; with their counts when `withCounts`, and only the
   * properties in `fields` when given. Each condition rides an index: the primary key, the team's
   * (team, id), the nickname key, or a range of trainer_nickname_suffix.
   */
  async page(
    conditions: TrainerConditions,
    afterId: number,
    offset: number,
    limit: number,
    withCounts: boolean,
    fields?: readonly TrainerField[],
    { mayLag = false } = {},
  ): Promise<Trainer[]> {
    const { from, where, params } = matching(conditions, afterId);
    const columns = fields ? [COLUMN_OF.id, ...fields.map((field) => COLUMN_OF[field])].join(', ') : COLUMNS;
    const counted = withCounts ? `, ${CREATURE_COUNT}` : '';
    const conditionsSql = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    // LIMIT and OFFSET are written in (whole numbers, checked by the caller): MySQL refuses them as bound doubles.
    const window = ` ORDER BY t.id LIMIT ${Math.trunc(limit)} OFFSET ${Math.trunc(offset)}`;
    // Skipping `offset` trainers walks an index: the narrow one of the ids (or the team's), then
    // the page's rows are read by their ids, instead of stepping over whole rows (a deferred join:
    // about 1.6 times faster at offsets up to 10,000 on MariaDB).
    const sql =
      offset > 0 && conditions.nicknameContains === undefined
        ? `SELECT ${columns}${counted} FROM (SELECT t.id FROM trainer t${conditionsSql}${window}) p JOIN trainer t ON t.id = p.id ORDER BY t.id`
        : `SELECT ${columns}${counted} FROM ${from}${conditionsSql}${window}`;
    const rows = await this.sql.rows<TrainerRow>(sql, params, { mayLag });
    return rows.map(trainerOf);
  }

  /**
   * The ids of up to `limit` trainers of `team` (every team when undefined) above `afterId`, in
   * order: one walk of a narrow index (the ids', or the team's (team, id)), `limit` entries long.
   */
  async ids(team: Team | undefined, afterId: number, limit: number): Promise<number[]> {
    const index = this.sql.isMysql ? (team === undefined ? ' FORCE INDEX (IX_trainer_id)' : ' FORCE INDEX (IX_trainer_team_id)') : '';
    const rows = await this.sql.rows<{ id: number | string }>(
      `SELECT t.id FROM trainer t${index} WHERE ${team === undefined ? '' : 't.team = ? AND '}t.id > ? ORDER BY t.id LIMIT ${Math.trunc(limit)}`,
      team === undefined ? [afterId] : [team, afterId],
      { mayLag: true },
    );
    return rows.map((row) => sqlInt(row.id));
  }

  /**
   * The trainers of `team` (every team when undefined) whose ids lie in each of `ranges` (first
   * and last id, both included), with their counts when `withCounts` and only the properties in
   * `fields` when given (the id always comes): the pages of a turn in one statement, each a range
   * of the primary key (or of the team's index) rather than a lookup per trainer. The list of
   * ranges is padded to a few lengths so that the statement of whole rows can be prepared; reads
   * of some columns are not (each selection would be statements of its own, crowding the
   * connection's prepared statements).
   */
  async inRanges(
    team: Team | undefined,
    ranges: readonly (readonly [number, number])[],
    withCounts: boolean,
    fields?: readonly TrainerField[],
  ): Promise<Trainer[]> {
    const padded = shaped(ranges, [NO_ID, NO_ID] as const, [1, 4, 16, 64]);
    const columns = fields ? [COLUMN_OF.id, ...fields.map((field) => COLUMN_OF[field])].join(', ') : COLUMNS;
    const counted = withCounts ? `, ${CREATURE_COUNT}` : '';
    const between = padded.values.map(() => 't.id BETWEEN ? AND ?').join(' OR ');
    const from = team === undefined ? byIdFrom(this.sql.isMysql) : 'trainer t';
    const rows = await this.sql.rows<TrainerRow>(
      `SELECT ${columns}${counted} FROM ${from} WHERE ${team === undefined ? '' : 't.team = ? AND '}(${between})`,
      [...(team === undefined ? [] : [team]), ...padded.values.flat()],
      { prepared: padded.fits && fields === undefined, mayLag: true },
    );
    return rows.map(trainerOf);
  }

  /** Every team's number of trainers, from trainer_count (a few rows per 65,536 ids). */
  async teamCounts(): Promise<Map<Team, number>> {
    const rows = await this.sql.rows<{ team: Team; n: number | string }>(
      'SELECT team, COALESCE(SUM(n), 0) AS n FROM trainer_count GROUP BY team',
      [],
      { prepared: true, mayLag: true },
    );
    return new Map(rows.map((row) => [row.team, sqlInt(row.n)]));
  }

  /**
   * How many trainers match `conditions`: the team's or every team's rows of trainer_count (a few
   * rows, however many trainers), the nickname key's one row, or the distinct trainers of a range
   * of trainer_nickname_suffix.
   */
  async count(conditions: TrainerConditions, { mayLag = false } = {}): Promise<number> {
    let sql: string;
    let params: unknown[];
    if (conditions.nicknameContains !== undefined || conditions.nickname !== undefined) {
      const { from, where, params: matched } = matching(conditions, 0);
      sql = `SELECT COUNT(*) AS n FROM ${from}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`;
      params = matched;
    } else if (conditions.team !== undefined) {
      sql = 'SELECT COALESCE(SUM(n), 0) AS n FROM trainer_count WHERE team = ?';
      params = [conditions.team];
    } else {
      sql = 'SELECT COALESCE(SUM(n), 0) AS n FROM trainer_count';
      params = [];
    }
    const [row] = await this.sql.rows<{ n: number | string }>(sql, params, { prepared: true, mayLag });
    return sqlInt(row?.n ?? 0);
  }

  /** Which of a (normalised) email and nickname key is already registered, email first; null when neither. */
  async taken(email: string, nicknameKey: string): Promise<'email' | 'nickname' | null> {
    const rows = await this.sql.rows<{ email: string }>('SELECT email FROM trainer WHERE email = ? OR nickname_key = ? LIMIT 2', [
      email,
      nicknameKey,
    ]);
    if (rows.length === 0) return null;
    return rows.some((row) => row.email === email) ? 'email' : 'nickname';
  }

  /** The id and password hash for a (normalised) email, for authentication only. */
  async credentials(email: string): Promise<{ id: number; passwordHash: string } | null> {
    const [row] = await this.sql.rows<{ id: number | string; passwordHash: string }>(
      'SELECT id, password_hash AS passwordHash FROM trainer WHERE email = ?',
      [email],
      { prepared: true },
    );
    return row ? { id: sqlInt(row.id), passwordHash: row.passwordHash } : null;
  }

  /** A trainer by nickname, case-insensitively (the unique nickname_key). */
  async byNickname(nickname: string, withCount: boolean): Promise<Trainer | null> {
    const [row] = await this.sql.rows<TrainerRow>(
      `SELECT ${COLUMNS}${withCount ? `, ${CREATURE_COUNT}` : ''} FROM trainer t WHERE t.nickname_key = ?`,
      [nickname.toLowerCase()],
    );
    return row ? trainerOf(row) : null;
  }

  /** The creatures_owned of each trainer, in one statement (0 for a trainer that does not exist). */
  async creatureCounts(ids: readonly number[]): Promise<number[]> {
    if (ids.length === 0) return [];
    const rows = await this.sql.rows<{ id: number | string; n: number | string }>(
      `SELECT id, creatures_owned AS n FROM trainer WHERE id IN (${placeholders(ids.length)})`,
      ids,
      { prepared: ids.length === 1 },
    );
    const counts = new Map(rows.map((row) => [sqlInt(row.id), sqlInt(row.n)]));
    return ids.map((id) => counts.get(id) ?? 0);
  }

  /** How many creatures the trainer owns; null when there is no such trainer. */
  async creaturesOwned(id: number, { mayLag = false } = {}): Promise<number | null> {
    const [row] = await this.sql.rows<{ n: number | string }>('SELECT creatures_owned AS n FROM trainer WHERE id = ?', [id], {
      mayLag,
      prepared: true,
    });
    return row ? sqlInt(row.n) : null;
  }

  /** The sequence number of the trainer's last creature event; null when there is no such trainer. */
  async eventSeq(id: number): Promise<number | null> {
    const [row] = await this.sql.rows<{ seq: number | string }>('SELECT event_seq AS seq FROM trainer WHERE id = ?', [id], {
      prepared: true,
    });
    return row ? sqlInt(row.seq) : null;
  }

  /** The last event numbers of these trainers (those that exist), in one statement. */
  async eventSeqs(ids: readonly number[]): Promise<Map<number, number>> {
    if (ids.length === 0) return new Map();
    const rows = await this.sql.rows<{ id: number | string; seq: number | string }>(
      `SELECT id, event_seq AS seq FROM trainer WHERE id IN (${placeholders(ids.length)})`,
      ids,
    );
    return new Map(rows.map((row) => [sqlInt(row.id), sqlInt(row.seq)]));
  }
}

/**
 * What `npm run reconcile` asks of the database (see src/reconcile.ts): every statement reads or
 * writes one short stretch of ids, so that each holds its locks briefly while instances serve.
 */
export class ReconcileQueries {
  constructor(private readonly sql: Sql) {}

  /**
   * The highest trainer id that the trainers, their nickname suffixes, creatures or kept events
   * hold now (0: none). Above it, every row is a later write's (ids only grow), which reconcile
   * leaves as it is.
   */
  async lastId(): Promise<number> {
    const [row] = await this.sql.rows<{
      trainer: number | string | null;
      suffix: number | string | null;
      creature: number | string | null;
      event: number | string | null;
    }>(
      'SELECT (SELECT MAX(id) FROM trainer) AS trainer, (SELECT MAX(trainer_id) FROM trainer_nickname_suffix) AS suffix,' +
        ' (SELECT MAX(trainer_id) FROM creature) AS creature, (SELECT MAX(trainer_id) FROM creature_event) AS event',
      [],
    );
    return Math.max(sqlInt(row?.trainer ?? 0), sqlInt(row?.suffix ?? 0), sqlInt(row?.creature ?? 0), sqlInt(row?.event ?? 0));
  }

  /** The ids of up to `limit` trainers above `afterId` and up to `upTo`, in order. */
  async idsAfter(afterId: number, upTo: number, limit: number): Promise<number[]> {
    const rows = await this.sql.rows<{ id: number | string }>(
      `SELECT id FROM trainer WHERE id > ? AND id <= ? ORDER BY id LIMIT ${Math.trunc(limit)}`,
      [afterId, upTo],
    );
    return rows.map((row) => sqlInt(row.id));
  }

  /**
   * For the trainers with ids above `from` and up to `to`: their nickname suffixes written anew
   * (those of trainers no longer there go), the creatures and kept events of trainers no longer
   * there removed (a deletion that stopped midway leaves them, invisible: AccountService.remove), and their
   * creatures_owned set to their creature rows, in one transaction. How many trainers' counts
   * changed, and how many such creatures were removed.
   *
   * On MySQL the range's trainer rows are locked first, as every other write of a trainer does
   * (a registration inserts its row first; a rename, a deletion and a creature write lock it
   * first), so none of them holds a row this needs while waiting for one this holds: the
   * suffix rewrite used to read the rows with shared locks and then update them, and a rename
   * asking for a row in between deadlocked with it. At READ COMMITTED, nothing outside the
   * range's rows is locked (no gaps): registrations, whose rows and suffixes lie above it, go on.
   */
  async trainers(from: number, to: number): Promise<{ countsChanged: number; creaturesRemoved: number }> {
    const count = '(SELECT COUNT(*) FROM creature c WHERE c.trainer_id = trainer.id)';
    const statements: BatchStatement[] = [
      // By the primary key, as the other writes lock a trainer: through IX_trainer_id, which the
      // optimizer prefers for this range, it locked that index's entries before the rows, and a
      // rename (its row, then the entry as it updates it) deadlocked with it.
      ...(this.sql.isMysql
        ? [{ sql: `SELECT t.id FROM ${byIdFrom(true)} WHERE t.id > ? AND t.id <= ? FOR UPDATE`, params: [from, to] }]
        : []),
      { sql: 'DELETE FROM trainer_nickname_suffix WHERE trainer_id > ? AND trainer_id <= ?', params: [from, to] },
      { sql: suffixesOf(this.sql.isMysql, 't.id > ? AND t.id <= ?'), params: [from, to] },
      {
        sql: 'DELETE FROM creature_event WHERE trainer_id > ? AND trainer_id <= ? AND NOT EXISTS (SELECT 1 FROM trainer t WHERE t.id = creature_event.trainer_id)',
        params: [from, to],
      },
      {
        sql: 'DELETE FROM creature WHERE trainer_id > ? AND trainer_id <= ? AND NOT EXISTS (SELECT 1 FROM trainer t WHERE t.id = creature.trainer_id)',
        params: [from, to],
      },
      {
        sql: `UPDATE ${trainerRows(this.sql.isMysql)} SET creatures_owned = ${count} WHERE id > ? AND id <= ? AND creatures_owned <> ${count}`,
        params: [from, to],
      },
    ];
    const results = await this.sql.batch(statements, { readCommitted: true });
    return { countsChanged: results[results.length - 1].affected, creaturesRemoved: results[results.length - 2].affected };
  }

  /** The bucket of trainer_count that holds `id`. */
  bucketOf(id: number): number {
    return Math.floor(id / COUNT_BUCKET);
  }

  /**
   * The first bucket at or after `bucket` that holds a trainer or a count (one whose trainers
   * are gone, to be dropped), or null.
   */
  async nextBucket(bucket: number): Promise<number | null> {
    const [row] = await this.sql.rows<{ id: number | string | null; bucket: number | string | null }>(
      'SELECT (SELECT id FROM trainer WHERE id >= ? ORDER BY id LIMIT 1) AS id,' +
        ' (SELECT bucket FROM trainer_count WHERE bucket >= ? ORDER BY bucket LIMIT 1) AS bucket',
      [bucket * COUNT_BUCKET, bucket],
    );
    const found = [
      ...(row?.id === null || row?.id === undefined ? [] : [this.bucketOf(sqlInt(row.id))]),
      ...(row?.bucket === null || row?.bucket === undefined ? [] : [sqlInt(row.bucket)]),
    ];
    return found.length === 0 ? null : Math.min(...found);
  }

  /**
   * Counts a bucket's trainers by team anew, in one transaction (a bucket with no trainer left
   * loses its counts): on MySQL the bucket's rows are read with shared locks first, so a
   * registration, deletion or team change in it waits (and its count is not lost) rather than
   * deadlocking over the count's row.
   */
  async bucket(bucket: number): Promise<void> {
    const range = [bucket * COUNT_BUCKET, (bucket + 1) * COUNT_BUCKET];
    await this.sql.batch([
      ...(this.sql.isMysql
        ? [{ sql: 'SELECT COUNT(*) AS n FROM trainer WHERE id >= ? AND id < ? LOCK IN SHARE MODE', params: range }]
        : []),
      { sql: 'DELETE FROM trainer_count WHERE bucket = ?', params: [bucket] },
      {
        sql: 'INSERT INTO trainer_count (bucket, team, n) SELECT ?, team, COUNT(*) FROM trainer WHERE id >= ? AND id < ? GROUP BY team',
        params: [bucket, ...range],
      },
    ]);
  }
}
