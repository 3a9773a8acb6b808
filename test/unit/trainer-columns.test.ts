import type { DataSource } from 'typeorm';
import { loadDatabaseConfig } from '../../src/config';
import { createDataSource } from '../../src/db/data-source';
import { presentTrainer } from '../../src/rest/present';
import { Team } from '../../src/trainers/team';
import { TRAINER_COLUMNS, isTrainerField, trainerOf } from '../../src/trainers/trainer.columns';
import { Trainer } from '../../src/trainers/trainer.entity';

/*
 * The trainer's public columns are named once (TRAINER_COLUMNS): the reads' column lists, the
 * row -> Trainer mapping come from that table, and the REST presenter's type (a new column fails
 * its build until it is shown). Its SQL names must be
 * the entity's (TypeORM's metadata, which the migrations and the schema test follow).
 */
describe('TRAINER_COLUMNS', () => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = await createDataSource(loadDatabaseConfig({ DATABASE_URL: 'sqlite::memory:' })).initialize();
  });
  afterAll(async () => dataSource?.destroy());

  it("names columns of the entity's table, each its property's own where the entity maps that property", () => {
    const metadata = dataSource.getMetadata(Trainer);
    for (const column of TRAINER_COLUMNS) {
      expect(metadata.findColumnWithDatabaseName(column.sql)).toBeDefined();
      const mapped = metadata.findColumnWithPropertyName(column.property);
      if (mapped) expect(mapped.databaseName).toBe(column.sql);
    }
    // creaturesOwned is read from creatures_owned (the entity's creatureCount) under the name the API gives it.
    expect(metadata.findColumnWithPropertyName('creaturesOwned')).toBeUndefined();
    expect(metadata.findColumnWithDatabaseName('creatures_owned')?.propertyName).toBe('creatureCount');
  });

  it('leaves the password hash, the nickname key and the event number out', () => {
    expect(
      TRAINER_COLUMNS.map((column) => column.sql).filter((sql) => ['password_hash', 'nickname_key', 'event_seq'].includes(sql)),
    ).toEqual([]);
  });

  it('a read can leave out the fields of a trainer, never its id or (asked for apart) its count', () => {
    expect(['nickname', 'firstName', 'lastName', 'email', 'team', 'createdAt'].filter(isTrainerField)).toHaveLength(6);
    for (const name of ['id', 'creaturesOwned', 'passwordHash', 'nicknameKey', 'creatures', 'toString', ''])
      expect(isTrainerField(name)).toBe(false);
  });
});

describe('trainerOf', () => {
  it('makes a Trainer of a row as mysql2 or SQLite hands it out: ids and counts as numbers, dates as Dates', () => {
    const trainer = trainerOf({
      id: '42',
      nickname: 'Ash',
      firstName: 'A',
      lastName: 'K',
      email: 'ash@example.test',
      team: Team.VALOR,
      creaturesOwned: '3',
      createdAt: '2026-01-02 03:04:05.678',
    });
    expect(trainer).toBeInstanceOf(Trainer);
    expect({ ...trainer }).toEqual({
      id: 42,
      nickname: 'Ash',
      firstName: 'A',
      lastName: 'K',
      email: 'ash@example.test',
      team: Team.VALOR,
      creaturesOwned: 3,
      createdAt: new Date('2026-01-02T03:04:05.678Z'),
    });
    const date = new Date('2026-05-06T07:08:09.010Z');
    expect(trainerOf({ id: 7, createdAt: date }).createdAt).toBe(date);
  });

  it('sets only what the row holds: a column left out or NULL (a count not read) stays unset', () => {
    const trainer = trainerOf({ id: 7, email: 'x@example.test', creaturesOwned: null });
    expect(Object.keys(trainer).sort()).toEqual(['email', 'id']);
    expect('creaturesOwned' in trainerOf({ id: 7, creaturesOwned: undefined })).toBe(false);
  });
});

describe('presentTrainer', () => {
  const trainer = trainerOf({
    id: 5,
    nickname: 'Misty',
    firstName: 'M',
    lastName: 'W',
    email: 'misty@example.test',
    team: Team.MYSTIC,
    createdAt: '2026-01-02 03:04:05.678',
  });

  it('shows every public column, in order, with the email to the trainer itself only and a count not read as 0', () => {
    expect(presentTrainer(trainer, 5)).toEqual({
      id: 5,
      nickname: 'Misty',
      firstName: 'M',
      lastName: 'W',
      email: 'misty@example.test',
      team: Team.MYSTIC,
      creaturesOwned: 0,
      createdAt: new Date('2026-01-02T03:04:05.678Z'),
    });
    expect(Object.keys(presentTrainer(trainer, 5))).toEqual(TRAINER_COLUMNS.map((column) => column.property));
    const seen = presentTrainer(Object.assign(new Trainer(), trainer, { creaturesOwned: 4 }), 6);
    // Not shown to another trainer: undefined, which the serializer (and JSON.stringify) leaves out.
    expect(seen.email).toBeUndefined();
    expect(JSON.stringify(seen)).not.toContain('email');
    expect(seen.creaturesOwned).toBe(4);
  });
});
