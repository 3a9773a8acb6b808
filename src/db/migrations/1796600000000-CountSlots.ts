import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * `trainer_count` gets a `slot`: a bucket's count of a team is the sum of its rows, one per slot.
 * On MySQL each write counts in the slot of the server it goes through (its
 * auto_increment_offset): on a Galera cluster each node has its own (wsrep_auto_increment_control),
 * so registrations, team changes and deletions through different nodes no longer write the same
 * few rows, which the cluster would refuse as conflicts at commit. One server alone has one
 * offset (1): one row per bucket and team, as before. The rows there are stay in slot 1.
 * Frozen: literal SQL only, as every migration.
 */
export class CountSlots1796600000000 implements MigrationInterface {
  name = 'CountSlots1796600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      // SQLite cannot change a primary key: the table is made again (a few rows per 65,536 trainers).
      await queryRunner.query(
        'CREATE TABLE "trainer_count_slots" ("bucket" integer NOT NULL, "team" varchar(8) NOT NULL, "slot" integer NOT NULL DEFAULT 1, "n" integer NOT NULL, PRIMARY KEY ("bucket", "team", "slot")) WITHOUT ROWID',
      );
      await queryRunner.query(
        'INSERT INTO "trainer_count_slots" ("bucket", "team", "slot", "n") SELECT "bucket", "team", 1, "n" FROM "trainer_count"',
      );
      await queryRunner.query('DROP TABLE "trainer_count"');
      await queryRunner.query('ALTER TABLE "trainer_count_slots" RENAME TO "trainer_count"');
      return;
    }
    await queryRunner.query(
      'ALTER TABLE `trainer_count` ADD COLUMN `slot` smallint unsigned NOT NULL DEFAULT 1 AFTER `team`, DROP PRIMARY KEY, ADD PRIMARY KEY (`bucket`, `team`, `slot`)',
    );
  }

  /** Each bucket's slots summed into one row again. */
  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(
        'CREATE TABLE "trainer_count_one" ("bucket" integer NOT NULL, "team" varchar(8) NOT NULL, "n" integer NOT NULL, PRIMARY KEY ("bucket", "team")) WITHOUT ROWID',
      );
      await queryRunner.query(
        'INSERT INTO "trainer_count_one" ("bucket", "team", "n") SELECT "bucket", "team", SUM("n") FROM "trainer_count" GROUP BY "bucket", "team"',
      );
      await queryRunner.query('DROP TABLE "trainer_count"');
      await queryRunner.query('ALTER TABLE "trainer_count_one" RENAME TO "trainer_count"');
      return;
    }
    await queryRunner.query(
      'CREATE TABLE `trainer_count_one` (`bucket` bigint NOT NULL, `team` varchar(8) NOT NULL, `n` bigint NOT NULL, PRIMARY KEY (`bucket`, `team`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'INSERT INTO `trainer_count_one` (`bucket`, `team`, `n`) SELECT `bucket`, `team`, SUM(`n`) FROM `trainer_count` GROUP BY `bucket`, `team`',
    );
    await queryRunner.query('DROP TABLE `trainer_count`');
    await queryRunner.query('RENAME TABLE `trainer_count_one` TO `trainer_count`');
  }
}
