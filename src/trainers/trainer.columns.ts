import { sqlDate, sqlInt } from '../db/sql';
import { Trainer } from './trainer.entity';

/*
 * The trainer table's public columns, each named once: its name in SQL, the Trainer property it
 * fills (also its name in rows, as the reads alias it, and in both transports' answers), how a
 * row's value becomes that property, and how the reads, the writes and the REST presenter treat
 * it. The reads' column lists (trainer.queries.ts), the row type and the row -> Trainer mapping
 * (here), the REST shape (rest/present.ts, rest/schemas.ts) and the writes' public columns derive
 * from it. Only names: the SQL itself stays in trainer.queries.ts. The stored-only columns
 * (nickname_key, password_hash, event_seq) are the query file's own, never read into a Trainer.
 *
 * A new public column: a migration, its property on the entity (trainer.entity.ts: TypeORM's
 * column name and type, and its GraphQL field), a line here, its JSON schema (rest/schemas.ts:
 * the compiler asks for it), and its input rules if clients set it (trainer.inputs.ts, schemas.ts).
 */

/** How the reads take a column. */
export type ColumnRead =
  /** In every read: the id. */
  | 'always'
  /** In every read of whole trainers, and in a read of some fields (TrainerField) that names it. */
  | 'field'
  /** Only in reads that ask for counts (`withCount(s)`); kept by creature writes, not by the trainer's. */
  | 'count';

/** What writes a column through trainer.queries.ts. */
export type ColumnWrite =
  /** Nothing: the database (the id) or other statements (the count). */
  | 'never'
  /** The registration's INSERT only. */
  | 'insert'
  /** The registration's INSERT and a profile change (TrainerQueries.updateProfile). */
  | 'profile';

/** Who a REST answer shows a column to (rest/present.ts); GraphQL decides per field (TrainerResolver). */
export type ColumnShown =
  /** Every reader. */
  | 'everyone'
  /** The trainer itself only, as visibleEmail (trainer.service.ts) decides: absent for any other reader. */
  | 'itself';

/** What a column is used for: by the reads, the writes, the REST presenter. */
interface Uses {
  readonly read: ColumnRead;
  readonly write: ColumnWrite;
  readonly shown: ColumnShown;
}

/**
 * One public column of the trainer table (see TRAINER_COLUMNS): property P, its values in rows R
 * and on the entity V. That V fits the entity's property is checked where trainerOf fills a
 * Trainer (its `fill` would not take one).
 */
type TrainerColumn<P extends keyof Trainer, R, V, U extends Uses> = U & {
  readonly property: P;
  /** Its name in the trainer table. */
  readonly sql: string;
  /** The property from a row's value (sqlInt, sqlDate, or as stored). */
  readonly from: (value: R) => V;
  /** Sets the property from a row that has the column (not null); leaves it unset otherwise. */
  readonly fill: (trainer: { [Q in P]?: V }, row: { readonly [Q in P]?: R | null }) => void;
};

function column<P extends keyof Trainer, R, V, U extends Uses>(
  property: P,
  sql: string,
  from: (value: R) => V,
  uses: U,
): TrainerColumn<P, R, V, U> {
  return {
    ...uses,
    property,
    sql,
    from,
    fill: (trainer, row) => {
      const value = row[property];
      if (value !== undefined && value !== null) trainer[property] = from(value);
    },
  };
}

/** An integer: a number, or (mysql2, a BIGINT beyond 2^53 - 1) a decimal string (sqlInt). */
const int = <P extends keyof Trainer, U extends Uses>(property: P, sql: string, uses: U) =>
  column<P, number | string, number, U>(property, sql, sqlInt, uses);
/** A DATETIME: a Date (mysql2), or UTC text (SQLite) (sqlDate). */
const date = <P extends keyof Trainer, U extends Uses>(property: P, sql: string, uses: U) =>
  column<P, Date | string, Date, U>(property, sql, sqlDate, uses);
/** Text, as stored: what the service wrote (a team is one of the Team values). */
const text = <P extends keyof Trainer, U extends Uses>(property: P, sql: string, uses: U) =>
  column<P, Trainer[P] & string, Trainer[P] & string, U>(property, sql, (value) => value, uses);

const always = { read: 'always', write: 'never', shown: 'everyone' } as const;
const profile = { read: 'field', write: 'profile', shown: 'everyone' } as const;

/**
 * The public columns, in the order of the reads' column lists and of a trainer in REST answers.
 * nickname_key (the unique, lower-cased nickname), password_hash and event_seq are never read
 * into a Trainer: trainer.queries.ts names them where it needs them.
 */
export const TRAINER_COLUMNS = [
  int('id', 'id', always),
  text('nickname', 'nickname', profile),
  text('firstName', 'first_name', profile),
  text('lastName', 'last_name', profile),
  text('email', 'email', { read: 'field', write: 'insert', shown: 'itself' }),
  text('team', 'team', profile),
  int('creaturesOwned', 'creatures_owned', { read: 'count', write: 'never', shown: 'everyone' }),
  date('createdAt', 'created_at', { read: 'field', write: 'insert', shown: 'everyone' }),
] as const;

type Column = (typeof TRAINER_COLUMNS)[number];
/** The public columns that `use` holds for (`{ read: 'field' }`, `{ shown: 'itself' }`...). */
type ColumnsWhere<Use extends Partial<Uses>> = Extract<Column, Use>;

/** A property that a public column fills. */
export type TrainerColumnProperty = Column['property'];

/** A property of a trainer that a read can leave out (the `fields` of TrainerQueries.page and inRanges). */
export type TrainerField = ColumnsWhere<{ read: 'field' }>['property'];

/** The properties a REST answer shows to every reader, and those it shows to the trainer itself only. */
export type ShownProperty = ColumnsWhere<{ shown: 'everyone' }>['property'];
export type OwnProperty = ColumnsWhere<{ shown: 'itself' }>['property'];

type Written = ColumnsWhere<{ write: 'insert' | 'profile' }>;
type Profile = ColumnsWhere<{ write: 'profile' }>;

/** The properties of the public columns that a registration's INSERT writes, and those a profile change may write. */
export type InsertedProperty = Written['property'];
export type ProfileProperty = Profile['property'];

/** The public columns that a registration's INSERT writes, in order. */
export const INSERTED_COLUMNS = TRAINER_COLUMNS.filter((c): c is Written => c.write !== 'never');
/** The public columns that a profile change may write, in order. */
export const PROFILE_COLUMNS = TRAINER_COLUMNS.filter((c): c is Profile => c.write === 'profile');

const FIELDS: ReadonlySet<string> = new Set(TRAINER_COLUMNS.filter((c) => c.read === 'field').map((c) => c.property));

export const isTrainerField = (name: string): name is TrainerField => FIELDS.has(name);

/**
 * A trainer as the reads select it, each column under its property's name: any of the public
 * columns (the reads of some fields leave some out, `creaturesOwned` only when counts were asked).
 */
export type TrainerRow = { [C in Column as C['property']]?: Parameters<C['from']>[0] | null };

/** A Trainer with the properties its row holds (`creaturesOwned` when the statement read it). */
export function trainerOf(row: TrainerRow): Trainer {
  const trainer = new Trainer();
  for (const column of TRAINER_COLUMNS) column.fill(trainer, row);
  return trainer;
}
