import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The trainer's REST JSON after its id, as this migration stored it (frozen: written out, not imported). */
const TRAINER_JSON_TAIL =
  `CONCAT(',"nickname":', JSON_QUOTE(nickname), ',"firstName":', JSON_QUOTE(first_name), ',"lastName":', JSON_QUOTE(last_name),` +
  ` ',"team":', JSON_QUOTE(team), ',"creaturesOwned":', creatures_owned, ',"createdAt":"', REPLACE(CAST(created_at AS CHAR), ' ', 'T'), 'Z"')`;
const TRAINER_JSON_TAIL_LENGTH = 2600;

/** The trainer table's columns before this migration (SQLite copies them into the new table). */
const TRAINER_COLUMNS =
  '"id", "nickname", "nickname_key", "first_name", "last_name", "email", "password_hash", "team", "created_at", "event_seq", "creatures_owned"';

/**
 * `trainer.rest_json`: a stored generated column holding the trainer's REST JSON after its id
 * (`,"nickname":...,"createdAt":"...Z"`), which the database keeps for every write, the service's
 * and plain SQL alike (creature counts included: creatures_owned is one of its inputs). A REST
 * page then reads one column per trainer instead of building its JSON from seven: MariaDB's CPU
 * per REST list went from about 72 to 53 us (see bench/README). TypeORM records a generated
 * column's expression in its typeorm_metadata table (which this creates, as TypeORM creates it),
 * so that its schema comparison knows the column. Literal SQL on both, as TypeORM's schema builder
 * wrote it when this migration first ran:
 * - SQLite cannot add a stored column in place: the table is copied into a new one with the
 *   column, and its indexes made again (foreign keys are off while migrations run, so dropping the
 *   old table cascades nothing). The AUTOINCREMENT high-water mark is carried over, so ids of
 *   trainers deleted before stay unused.
 * - MySQL/MariaDB add it in place, without TypeORM's trailing NULL, which MariaDB refuses after a
 *   generated column. MariaDB rebuilt a table of 100k trainers in about 1 s.
 */
export class TrainerJson1795900000000 implements MigrationInterface {
  name = 'TrainerJson1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'better-sqlite3') {
      await queryRunner.query(
        'CREATE TABLE IF NOT EXISTS `typeorm_metadata` (`type` varchar(255) NOT NULL, `database` varchar(255) NULL, `schema` varchar(255) NULL,' +
          ' `table` varchar(255) NULL, `name` varchar(255) NULL, `value` text NULL) ENGINE=InnoDB',
      );
      await queryRunner.query(
        `ALTER TABLE \`trainer\` ADD \`rest_json\` varchar(${TRAINER_JSON_TAIL_LENGTH}) AS (${TRAINER_JSON_TAIL}) STORED`,
      );
      await queryRunner.query(
        'INSERT INTO `typeorm_metadata` (`type`, `schema`, `table`, `name`, `value`) VALUES (?, DATABASE(), ?, ?, ?)',
        ['GENERATED_COLUMN', 'trainer', 'rest_json', TRAINER_JSON_TAIL],
      );
      return;
    }
    await queryRunner.query(
      'CREATE TABLE IF NOT EXISTS "typeorm_metadata" ("type" varchar NOT NULL, "database" varchar, "schema" varchar, "table" varchar, "name" varchar, "value" text)',
    );
    const sequence = (await queryRunner.query(`SELECT seq FROM sqlite_sequence WHERE name = 'trainer'`)) as { seq: number }[];
    await queryRunner.query(
      'CREATE TABLE "temporary_trainer" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "nickname" varchar(32) NOT NULL,' +
        ' "nickname_key" varchar(32) NOT NULL, "first_name" varchar(192) NOT NULL, "last_name" varchar(192) NOT NULL,' +
        ' "email" varchar(254) NOT NULL, "password_hash" varchar(255) NOT NULL, "team" varchar(8) NOT NULL,' +
        ' "created_at" datetime(3) NOT NULL, "event_seq" bigint NOT NULL DEFAULT (0), "creatures_owned" integer NOT NULL DEFAULT (0),' +
        ` "rest_json" varchar(${TRAINER_JSON_TAIL_LENGTH}) AS (${TRAINER_JSON_TAIL}) STORED)`,
    );
    await queryRunner.query(`INSERT INTO "temporary_trainer" (${TRAINER_COLUMNS}) SELECT ${TRAINER_COLUMNS} FROM "trainer"`);
    await queryRunner.query('DROP TABLE "trainer"');
    await queryRunner.query('ALTER TABLE "temporary_trainer" RENAME TO "trainer"');
    if (sequence.length > 0) {
      await queryRunner.query(`UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'trainer'`, [sequence[0].seq]);
    }
    await queryRunner.query('CREATE INDEX "IX_trainer_id" ON "trainer" ("id")');
    await queryRunner.query('CREATE UNIQUE INDEX "UQ_trainer_email" ON "trainer" ("email")');
    await queryRunner.query('CREATE UNIQUE INDEX "UQ_trainer_nickname_key" ON "trainer" ("nickname_key")');
    await queryRunner.query(
      'INSERT INTO "typeorm_metadata" ("type", "database", "schema", "table", "name", "value") VALUES (?, NULL, NULL, ?, ?, ?)',
      ['GENERATED_COLUMN', 'trainer', 'rest_json', TRAINER_JSON_TAIL],
    );
  }

  /**
   * By hand on both: TypeORM would copy the table on SQLite, and a revert turns foreign keys off
   * only inside its transaction, where SQLite ignores that, so dropping the old trainer table
   * would delete every creature (ON DELETE CASCADE).
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.options.type === 'better-sqlite3';
    await queryRunner.query(sqlite ? 'ALTER TABLE "trainer" DROP COLUMN "rest_json"' : 'ALTER TABLE `trainer` DROP COLUMN `rest_json`');
    await queryRunner.query(
      sqlite
        ? `DELETE FROM "typeorm_metadata" WHERE "type" = 'GENERATED_COLUMN' AND "table" = 'trainer' AND "name" = 'rest_json'`
        : "DELETE FROM `typeorm_metadata` WHERE `type` = 'GENERATED_COLUMN' AND `table` = 'trainer' AND `name` = 'rest_json'",
    );
  }
}
