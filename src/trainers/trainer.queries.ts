import { placeholders, sqlDate, sqlInt, type Sql } from '../db/sql';
import type { Team } from './team';
import type { TrainerConditions } from './trainer-filter';
import { Trainer } from './trainer.entity';

/*
 * Every statement about the trainer table. Services call these; nothing else writes SQL for
 * trainers. A new column touches this file, the entity and a migration.
 */

/** A trainer as the reads select it (everything but the password hash). */
interface TrainerRow {
  id: number | string;
  nickname: string;
  firstName: string;
  lastName: string;
  email: string;
  team: Team;
  createdAt: Date | string;
  creaturesOwned?: number | string | null;
}

/** A row to insert: the stored forms (normalised names, lower-cased email and nickname key, the hash). */
export interface NewTrainerRow {
  readonly nickname: string;
  readonly nicknameKey: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly passwordHash: string;
  readonly team: Team;
  readonly createdAt: Date;
}

const COLUMNS = 't.id, t.nickname, t.first_name AS firstName, t.last_name AS lastName, t.email, t.team, t.created_at AS createdAt';
/** Counted through the (trainer_id) index: only that trainer's index entries are read. */
const CREATURE_COUNT = '(SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id)';

export interface PageWhere {
  /** Only trainers with a greater id (a cursor's). */
  readonly afterId?: number;
  readonly conditions?: TrainerConditions;
}

/** LIKE's own characters, escaped with `!` (nicknames may hold `_`). */
const likeText = (text: string) => text.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`);

/** The WHERE conditions (ANDed) and their values for a filter. */
function matching(conditions: TrainerConditions, afterId?: number): { sql: string[]; values: unknown[] } {
  const sql: string[] = [];
  const values: unknown[] = [];
  if (afterId !== undefined) {
    sql.push('id > ?');
    values.push(afterId);
  }
  if (conditions.nickname !== undefined) {
    sql.push('nickname_key = ?');
    values.push(conditions.nickname.toLowerCase());
  }
  if (conditions.nicknameContains !== undefined) {
    sql.push("nickname_key LIKE ? ESCAPE '!'");
    values.push(`%${likeText(conditions.nicknameContains)}%`);
  }
  if (conditions.team !== undefined) {
    sql.push('team = ?');
    values.push(conditions.team);
  }
  return { sql, values };
}

/** A trainer, with `creaturesOwned` when the statement counted them. */
function toTrainer(row: TrainerRow): Trainer {
  const trainer = new Trainer();
  trainer.id = sqlInt(row.id);
  trainer.nickname = row.nickname;
  trainer.firstName = row.firstName;
  trainer.lastName = row.lastName;
  trainer.email = row.email;
  trainer.team = row.team;
  trainer.createdAt = sqlDate(row.createdAt);
  if (row.creaturesOwned !== null && row.creaturesOwned !== undefined) trainer.creaturesOwned = sqlInt(row.creaturesOwned);
  return trainer;
}

export class TrainerQueries {
  constructor(private readonly sql: Sql) {}

  /** Inserts a trainer and returns its id; the unique indexes on email and nickname key decide duplicates. */
  async insert(row: NewTrainerRow): Promise<number> {
    const { insertId } = await this.sql.write(
      'INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [row.nickname, row.nicknameKey, row.firstName, row.lastName, row.email, row.passwordHash, row.team, this.sql.date(row.createdAt)],
    );
    return insertId;
  }

  /**
   * Trainers by id, with the creature count of those in `countFor` from the same statement.
   * Prepared only while the lists are short: a request alone (its caller and one trainer) keeps
   * to a few statement shapes, while merged batches, whose lists have any length, would fill each
   * connection's prepared-statement cache with shapes used once.
   */
  async byIds(ids: readonly number[], countFor: readonly number[]): Promise<Map<number, Trainer>> {
    const counted =
      countFor.length === 0 ? '' : `, CASE WHEN t.id IN (${placeholders(countFor.length)}) THEN ${CREATURE_COUNT} END AS creaturesOwned`;
    const rows = await this.sql.rows<TrainerRow>(
      `SELECT ${COLUMNS}${counted} FROM trainer t WHERE t.id IN (${placeholders(ids.length)})`,
      [...countFor, ...ids],
      { prepared: ids.length + countFor.length <= 4 },
    );
    return new Map(rows.map((row) => [sqlInt(row.id), toTrainer(row)]));
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

  /**
   * A page by id: `limit` trainers after `offset` of those matching (and after `afterId`), plus one
   * more when it exists, which tells whether another page follows. The skipped rows are walked
   * in a derived table that reads ids only, and whole rows are read for the page alone (a
   * "deferred join"). A deep offset still walks every skipped entry, whatever the query's shape;
   * unfiltered, on MySQL, it walks the narrow index on id rather than the clustered primary key,
   * which the optimizer would pick (about 11-14 ms instead of 17-21 ms at offset 99,980 of
   * 100,000, in MariaDB itself; AddTrainerIdIndex migration). A cursor (`afterId`) starts the
   * walk at its id, so a page costs the same at any depth.
   */
  async page(limit: number, offset: number, withCounts: boolean, { afterId, conditions = {} }: PageWhere = {}): Promise<Trainer[]> {
    const where = matching(conditions, afterId);
    const filtered = where.sql.length > 0;
    const ids = this.sql.isMysql && !filtered ? 'trainer FORCE INDEX (IX_trainer_id)' : 'trainer';
    const rows = await this.sql.rows<TrainerRow>(
      `SELECT ${COLUMNS}${withCounts ? `, ${CREATURE_COUNT} AS creaturesOwned` : ''} FROM trainer t JOIN (SELECT id FROM ${ids}${filtered ? ` WHERE ${where.sql.join(' AND ')}` : ''} ORDER BY id LIMIT ? OFFSET ?) p ON p.id = t.id ORDER BY t.id`,
      [...where.values, limit + 1, offset],
    );
    return rows.map(toTrainer);
  }

  /** How many trainers match. */
  async count(conditions: TrainerConditions = {}): Promise<number> {
    const where = matching(conditions);
    const [row] = await this.sql.rows<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM trainer${where.sql.length > 0 ? ` WHERE ${where.sql.join(' AND ')}` : ''}`,
      where.values,
    );
    return sqlInt(row.n);
  }

  /** A trainer by nickname, case-insensitively (the unique nickname_key). */
  async byNickname(nickname: string, withCount: boolean): Promise<Trainer | null> {
    const [row] = await this.sql.rows<TrainerRow>(
      `SELECT ${COLUMNS}${withCount ? `, ${CREATURE_COUNT} AS creaturesOwned` : ''} FROM trainer t WHERE t.nickname_key = ?`,
      [nickname.toLowerCase()],
    );
    return row ? toTrainer(row) : null;
  }

  async exists(id: number): Promise<boolean> {
    return (await this.sql.rows('SELECT 1 AS found FROM trainer WHERE id = ?', [id], { prepared: true })).length > 0;
  }
}
