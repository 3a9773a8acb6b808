import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Resumable events: each creature event is also kept in `creature_event`, written in the
 * transaction of the write it reports, keyed by its trainer and number, so a subscriber that
 * gives the last number it saw (`creatureEvents(trainerId, after)`) is sent what it missed by one
 * range of the primary key. `at` orders the pruning (src/events/event-log.queries.ts), whose place in
 * that order is the one row of `creature_event_pruning`. No foreign key: a deleted trainer's
 * events are erased a stretch at a time after it, like its creatures.
 */
export class CreatureEvents1796700000000 implements MigrationInterface {
  name = 'CreatureEvents1796700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(
        'CREATE TABLE "creature_event" ("trainer_id" bigint NOT NULL, "seq" bigint NOT NULL, "kind" varchar(8) NOT NULL, "creature_id" bigint NOT NULL, "name" varchar(96) NOT NULL, "species_id" integer NOT NULL, "level" integer NOT NULL, "created_at" datetime NOT NULL, "at" datetime NOT NULL, PRIMARY KEY ("trainer_id", "seq"))',
      );
      await queryRunner.query('CREATE INDEX "IX_creature_event_at" ON "creature_event" ("at", "trainer_id", "seq")');
      await queryRunner.query(
        'CREATE TABLE "creature_event_pruning" ("id" integer PRIMARY KEY NOT NULL, "at" datetime NOT NULL, "trainer_id" bigint NOT NULL, "seq" bigint NOT NULL)',
      );
      await queryRunner.query(
        `INSERT INTO "creature_event_pruning" ("id", "at", "trainer_id", "seq") VALUES (1, '1970-01-01 00:00:00.000', 0, 0)`,
      );
      return;
    }
    await queryRunner.query(
      'CREATE TABLE `creature_event` (`trainer_id` bigint NOT NULL, `seq` bigint NOT NULL, `kind` varchar(8) NOT NULL, `creature_id` bigint NOT NULL, `name` varchar(96) NOT NULL, `species_id` int NOT NULL, `level` int NOT NULL, `created_at` datetime(3) NOT NULL, `at` datetime(3) NOT NULL, PRIMARY KEY (`trainer_id`, `seq`), KEY `IX_creature_event_at` (`at`, `trainer_id`, `seq`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'CREATE TABLE `creature_event_pruning` (`id` tinyint unsigned NOT NULL PRIMARY KEY, `at` datetime(3) NOT NULL, `trainer_id` bigint NOT NULL, `seq` bigint NOT NULL) ENGINE=InnoDB',
    );
    await queryRunner.query(
      "INSERT INTO `creature_event_pruning` (`id`, `at`, `trainer_id`, `seq`) VALUES (1, '1970-01-01 00:00:00.000', 0, 0)",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE creature_event_pruning');
    await queryRunner.query('DROP TABLE creature_event');
  }
}
