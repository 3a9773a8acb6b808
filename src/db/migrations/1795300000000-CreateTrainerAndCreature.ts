import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The first schema: trainers and their creatures. Uniqueness lives in the database:
 * email (stored lower-cased), nickname_key (lower-cased nickname) and
 * (trainer_id, name_key) where name_key is the trimmed, case-folded creature name.
 * MySQL tables use a binary collation so that equality is exactly the application's
 * normalisation, never a collation's idea of "equal" (e.g. `é` = `e`, trailing spaces).
 */
export class CreateTrainerAndCreature1795300000000 implements MigrationInterface {
  name = 'CreateTrainerAndCreature1795300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(
        `CREATE TABLE "trainer" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "nickname" varchar(32) NOT NULL, "nickname_key" varchar(32) NOT NULL, "first_name" varchar(64) NOT NULL, "last_name" varchar(64) NOT NULL, "email" varchar(254) NOT NULL, "password_hash" varchar(255) NOT NULL, "team" varchar(8) NOT NULL, "created_at" datetime(3) NOT NULL)`,
      );
      await queryRunner.query(`CREATE UNIQUE INDEX "UQ_trainer_email" ON "trainer" ("email")`);
      await queryRunner.query(`CREATE UNIQUE INDEX "UQ_trainer_nickname_key" ON "trainer" ("nickname_key")`);
      await queryRunner.query(
        `CREATE TABLE "creature" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "name" varchar(32) NOT NULL, "name_key" varchar(128) NOT NULL, "species_id" integer NOT NULL, "level" integer NOT NULL, "trainer_id" integer NOT NULL, "created_at" datetime(3) NOT NULL, CONSTRAINT "FK_creature_trainer" FOREIGN KEY ("trainer_id") REFERENCES "trainer" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`,
      );
      await queryRunner.query(`CREATE UNIQUE INDEX "UQ_creature_trainer_name" ON "creature" ("trainer_id", "name_key")`);
      return;
    }
    await queryRunner.query(
      'CREATE TABLE `trainer` (`id` int NOT NULL AUTO_INCREMENT, `nickname` varchar(32) NOT NULL, `nickname_key` varchar(32) NOT NULL, `first_name` varchar(64) NOT NULL, `last_name` varchar(64) NOT NULL, `email` varchar(254) NOT NULL, `password_hash` varchar(255) NOT NULL, `team` varchar(8) NOT NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `UQ_trainer_email` (`email`), UNIQUE INDEX `UQ_trainer_nickname_key` (`nickname_key`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'CREATE TABLE `creature` (`id` int NOT NULL AUTO_INCREMENT, `name` varchar(32) NOT NULL, `name_key` varchar(128) NOT NULL, `species_id` int NOT NULL, `level` int NOT NULL, `trainer_id` int NOT NULL, `created_at` datetime(3) NOT NULL, UNIQUE INDEX `UQ_creature_trainer_name` (`trainer_id`, `name_key`), PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'ALTER TABLE `creature` ADD CONSTRAINT `FK_creature_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE creature');
    await queryRunner.query('DROP TABLE trainer');
  }
}
