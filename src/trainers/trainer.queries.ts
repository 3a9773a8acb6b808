import { liveSessionsColumn, parseLiveSessions } from '../auth/session.queries';
import { placeholders, sqlDate, sqlInt, type BatchResult, type BatchStatement, type Sql } from '../db/sql';
import { MAX_ID } from '../common/validation';
import { Team } from './team';

const TEAMS = new Map<string, Team>(Object.values(Team).map((team) => [team, team]));
import { Trainer } from './trainer.entity';

/*
 * Every statement about the trainer table. Services call these; nothing else writes SQL for
 * trainers. A new column touches this file, the entity and a migration.
 */

/** A trainer as the reads select it (everything but the password hash, or the fields asked for). */
interface TrainerRow {
  id: number | string;
  nickname?: string;
  firstName?: string;
  lastName?: string;
  email?: string;
  team?: Team;
  createdAt?: Date | string;
  creaturesOwned?: number | string | null;
  liveSessions?: string | Buffer | null;
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

/** Each readable property of a trainer as a column (besides the id, always read). */
const COLUMN_OF = {
  nickname: 't.nickname',
  firstName: 't.first_name AS firstName',
  lastName: 't.last_name AS lastName',
  email: 't.email',
  team: 't.team',
  createdAt: 't.created_at AS createdAt',
} as const;

/** A property of a trainer that a read can leave out. */
export type TrainerField = keyof typeof COLUMN_OF;

export const isTrainerField = (name: string): name is TrainerField => Object.hasOwn(COLUMN_OF, name);
/** Kept by every creature create and delete (see nextEventSeqStatements), recounted at start (recountCreatures). */
const CREATURE_COUNT = 't.creatures_owned';

/** Trainers read by id, the open sessions of those asked about (the callers), and the index rows when asked. */
export interface TrainersById {
  readonly trainers: Map<number, Trainer>;
  readonly liveSessions: Map<number, readonly number[]>;
  /** The catch-up's rows when the statement could tell there are none (empty); otherwise undefined. */
  readonly indexRows?: IndexRow[];
}

/** What TrainerIndex reads while it catches up: at most `limit` trainers after `afterId`, and those in `ids`. */
export interface IndexRead {
  readonly afterId: number;
  readonly ids: readonly number[];
  readonly limit: number;
}

type IndexRowRead = { id: number | string; nicknameKey: string; team: Team };

const indexRowsStatement = ({ afterId, ids, limit }: IndexRead): BatchStatement => ({
  sql: `SELECT id, nickname_key AS nicknameKey, team FROM trainer WHERE id > ?${ids.length > 0 ? ` OR id IN (${placeholders(ids.length)})` : ''} ORDER BY id LIMIT ${Math.trunc(limit)}`,
  params: [afterId, ...ids],
});

/** Whether TrainerIndex has anything to catch up with (see mergedRead): its params are the afterId, then the holes. */
const pendingColumn = (holes: number): string => `EXISTS (SELECT 1 FROM trainer WHERE id > ? OR id IN (${placeholders(holes)})) AS pending`;

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
 * The merged read of TrainerService as one SELECT: the trainers by id and by range, with their
 * counts and the callers' open sessions, and whether TrainerIndex has anything to catch up with
 * (`pending`: a trainer after `afterId` or one of the holes it watches; never when no catch-up is
 * asked, as no id is above MAX_ID). Trainers are added rarely, so the catch-up's rows are read by
 * a statement of their own only when there are some. Its lists are padded to a few lengths (ids
 * and callers with an id that never exists, ranges with an empty one), so the statement takes a
 * handful of shapes and can be prepared: MySQL then sends binary rows, and mysql2 parsed a merged
 * read of 15 pages in 24-28 µs of CPU per page instead of 42-50 as text (a script sending each
 * form 3,000 times on 4 connections). Reading the catch-up's rows as a UNION ALL branch of this
 * statement cost MariaDB 60-64 µs per page against 47-51 for `pending`. The same text runs on SQLite.
 */
function mergedRead(
  ids: readonly number[],
  callers: readonly number[],
  ranges: readonly (readonly [number, number])[],
  index: IndexRead | undefined,
  now: Date | string,
  isMysql: boolean,
): { sql: string; params: unknown[]; prepared: boolean } {
  const idList = shaped(ids, NO_ID);
  const callerList = shaped(callers, NO_ID);
  // No range at all is a shape of its own: a filtered page read by its ids shows none.
  const rangeList = shaped<readonly [number, number]>(ranges, [NO_ID, NO_ID], [0, ...SHAPES]);
  const holes = shaped(index?.ids ?? [], NO_ID);
  const sql =
    `SELECT ${COLUMNS}, ${CREATURE_COUNT} AS creaturesOwned, ${liveSessionsColumn(callerList.values.length)} AS liveSessions,` +
    ` ${pendingColumn(holes.values.length)}` +
    ` FROM ${byIdFrom(isMysql)} WHERE t.id IN (${placeholders(idList.values.length)})${' OR t.id BETWEEN ? AND ?'.repeat(rangeList.values.length)}`;
  return {
    sql,
    params: [...callerList.values, now, index?.afterId ?? MAX_ID, ...holes.values, ...idList.values, ...rangeList.values.flat()],
    prepared: idList.fits && callerList.fits && rangeList.fits && holes.fits,
  };
}

/** What TrainerQueries.asJson read: the trainers' JSON text, and the caller check's and the index's answers as in TrainersById. */
export interface TrainersAsJson {
  readonly json: Map<number, TrainerJson>;
  readonly liveSessions: Map<number, readonly number[]>;
  readonly indexRows?: IndexRow[];
}

/** A trainer from its JSON text as the trainer itself sees it (TrainerJson.own): the caller, when a turn reads only REST pages. */
export function trainerFromJson(text: string): Trainer {
  const { createdAt, ...rest } = JSON.parse(text) as Omit<Trainer, 'createdAt'> & { createdAt: string };
  return Object.assign(new Trainer(), rest, { createdAt: new Date(createdAt) });
}

/** Trainers as the REST shim shows them, as JSON text made by the database (see TrainerQueries.asJson). */
export interface TrainerJson {
  /** As anyone but the trainer sees it. */
  readonly json: string;
  /** As the trainer itself sees it (with its email): only for the trainers asked for as viewers. */
  readonly own: string | null;
}

/**
 * The JSON text of a trainer row (`t`) as the REST shim sends it: its id, then the rest_json
 * column the database keeps (TRAINER_JSON_TAIL: the Trainer schema's properties in the order its
 * serializer writes them), then `email` (only `withEmail`, last). CONCAT: MySQL/MariaDB, and
 * SQLite from 3.44.
 */
const trainerJson = (withEmail: boolean): string =>
  withEmail ? `CONCAT('{"id":', t.id, t.rest_json, ',"email":', JSON_QUOTE(t.email), '}')` : `CONCAT('{"id":', t.id, t.rest_json, '}')`;

// The team is the Team constant itself: 100k copies of "MYSTIC" would cost megabytes.
const toIndexRow = (row: IndexRowRead): IndexRow => ({
  id: sqlInt(row.id),
  nicknameKey: row.nicknameKey,
  team: TEAMS.get(row.team) ?? row.team,
});

export interface IndexRow {
  readonly id: number;
  readonly nicknameKey: string;
  readonly team: Team;
}

/** A trainer with the properties its row holds, and `creaturesOwned` when the statement read it. */
function toTrainer(row: TrainerRow): Trainer {
  const trainer = new Trainer();
  trainer.id = sqlInt(row.id);
  if (row.nickname !== undefined) trainer.nickname = row.nickname;
  if (row.firstName !== undefined) trainer.firstName = row.firstName;
  if (row.lastName !== undefined) trainer.lastName = row.lastName;
  if (row.email !== undefined) trainer.email = row.email;
  if (row.team !== undefined) trainer.team = row.team;
  if (row.createdAt !== undefined) trainer.createdAt = sqlDate(row.createdAt);
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
   * Trainers by id (`ids`, and every trainer in the inclusive id `ranges`), with their creature
   * counts when `withCounts`, the open sessions of those in `callers` (the caller check: a
   * logged-out session's access tokens stop working without a statement of their own), and, with
   * `index`, whether TrainerIndex has rows to catch up with, all in one statement (mergedRead):
   * `indexRows` is empty when it has none, undefined when it has some (or no row could tell). A
   * page's trainers are a range: MariaDB walks one stretch of the primary key instead of looking
   * each id up (for 15 pages of 20, 460-650 µs of its CPU per statement instead of 860-1,140).
   */
  async byIds(
    ids: readonly number[],
    withCounts: boolean,
    callers: readonly number[] = [],
    { ranges = [], index }: { ranges?: readonly (readonly [number, number])[]; index?: IndexRead } = {},
  ): Promise<TrainersById> {
    const read = mergedRead(ids, callers, ranges, index, this.sql.date(new Date()), this.sql.isMysql);
    const rows = await this.sql.rows<TrainerRow & { pending: number | string }>(read.sql, read.params, { prepared: read.prepared });
    const trainers = new Map<number, Trainer>();
    const liveSessions = new Map<number, readonly number[]>();
    for (const row of rows) {
      if (!withCounts) row.creaturesOwned = undefined;
      const trainer = toTrainer(row);
      trainers.set(trainer.id, trainer);
      if (callers.length > 0) liveSessions.set(trainer.id, parseLiveSessions(row.liveSessions));
    }
    // Nothing to catch up with: no rows. Something, or no row to tell: undefined (read them apart).
    const caughtUp = index && rows.length > 0 && Number(rows[0].pending) === 0 ? [] : undefined;
    return { trainers, liveSessions, indexRows: caughtUp };
  }

  /**
   * The JSON text (see TrainerJson) of the trainers in `ids` and in the inclusive id `ranges`, and
   * for those in `viewers` also as they see themselves. REST pages send it as it is: the database
   * writes what mysql2 would otherwise parse column by column into objects that would then be
   * serialized, so the service's one thread does less per trainer (see bench/README). With
   * `callers` and `index`, it is also the turn's caller check and says whether the index has
   * anything to catch up with, as mergedRead does (the callers must be among `ids` and `viewers`:
   * their Trainer comes from their own JSON, see trainerFromJson). Padded to a few shapes and
   * prepared, like mergedRead.
   */
  async asJson(
    ids: readonly number[],
    ranges: readonly (readonly [number, number])[],
    viewers: readonly number[],
    { callers = [], index }: { callers?: readonly number[]; index?: IndexRead } = {},
  ): Promise<TrainersAsJson> {
    const isMysql = this.sql.isMysql;
    const idList = shaped(ids, NO_ID);
    const rangeList = shaped<readonly [number, number]>(ranges, [NO_ID, NO_ID], [0, ...SHAPES]);
    const viewerList = shaped(viewers, NO_ID);
    // The caller check and the index's `pending`, as in mergedRead, when the turn has callers.
    const check = callers.length > 0 || index !== undefined;
    const callerList = shaped(callers, NO_ID);
    const holes = shaped(index?.ids ?? [], NO_ID);
    const rows = await this.sql.rows<{
      id: number | string;
      json: string;
      own: string | null;
      liveSessions?: string | Buffer | null;
      pending?: number | string;
    }>(
      `SELECT t.id, ${trainerJson(false)} AS json,` +
        ` CASE WHEN t.id IN (${placeholders(viewerList.values.length)}) THEN ${trainerJson(true)} END AS own` +
        (check ? `, ${liveSessionsColumn(callerList.values.length)} AS liveSessions, ${pendingColumn(holes.values.length)}` : '') +
        ` FROM ${byIdFrom(isMysql)} WHERE t.id IN (${placeholders(idList.values.length)})${' OR t.id BETWEEN ? AND ?'.repeat(rangeList.values.length)}`,
      [
        ...viewerList.values,
        ...(check ? [...callerList.values, this.sql.date(new Date()), index?.afterId ?? MAX_ID, ...holes.values] : []),
        ...idList.values,
        ...rangeList.values.flat(),
      ],
      { prepared: idList.fits && rangeList.fits && viewerList.fits && callerList.fits && holes.fits },
    );
    const json = new Map<number, TrainerJson>();
    const liveSessions = new Map<number, readonly number[]>();
    for (const row of rows) {
      const id = sqlInt(row.id);
      json.set(id, { json: row.json, own: row.own });
      if (callers.length > 0) liveSessions.set(id, parseLiveSessions(row.liveSessions));
    }
    const caughtUp = index && rows.length > 0 && Number(rows[0].pending) === 0 ? [] : undefined;
    return { json, liveSessions, indexRows: caughtUp };
  }

  /**
   * Trainers by id with only the properties in `fields` (the id always comes), and their counts
   * when `withCounts`: a page of 100 that shows ids and counts has no names, emails or dates to
   * send and parse.
   */
  async someFieldsByIds(ids: readonly number[], withCounts: boolean, fields: readonly TrainerField[]): Promise<Map<number, Trainer>> {
    const columns = ['t.id', ...fields.map((field) => COLUMN_OF[field])].join(', ');
    const counted = withCounts ? `, ${CREATURE_COUNT} AS creaturesOwned` : '';
    const rows = await this.sql.rows<TrainerRow>(
      `SELECT ${columns}${counted} FROM ${byIdFrom(this.sql.isMysql)} WHERE t.id IN (${placeholders(ids.length)})`,
      ids,
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

  /** What TrainerIndex keeps of the trainers in `read` (see IndexRead), by id. */
  async indexRows(read: IndexRead): Promise<IndexRow[]> {
    const { sql, params } = indexRowsStatement(read);
    const rows = await this.sql.rows<IndexRowRead>(sql, params, { prepared: read.ids.length === 0 });
    return rows.map(toIndexRow);
  }

  /** A trainer by nickname, case-insensitively (the unique nickname_key). */
  async byNickname(nickname: string, withCount: boolean): Promise<Trainer | null> {
    const [row] = await this.sql.rows<TrainerRow>(
      `SELECT ${COLUMNS}${withCount ? `, ${CREATURE_COUNT} AS creaturesOwned` : ''} FROM trainer t WHERE t.nickname_key = ?`,
      [nickname.toLowerCase()],
    );
    return row ? toTrainer(row) : null;
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
  async creaturesOwned(id: number): Promise<number | null> {
    const [row] = await this.sql.rows<{ n: number | string }>('SELECT creatures_owned AS n FROM trainer WHERE id = ?', [id], {
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
}

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
      sql: `UPDATE trainer SET creatures_owned = creatures_owned + ?, event_seq = LAST_INSERT_ID(event_seq + 1) WHERE id = ?${guard}`,
      params,
    },
  ];
}

export function eventSeqOf(isMysql: boolean, result: BatchResult): number | null {
  if (result.affected === 0) return null;
  return isMysql ? result.insertId : sqlInt((result.rows[0] as { seq: number | string }).seq);
}
