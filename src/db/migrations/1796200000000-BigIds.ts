import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Frozen: this file imports nothing from the application, so that what it does to stored rows
 * never changes when the application's rules change later.
 */

/**
 * 64-bit ids: trainer.id, creature.id and the columns that refer to trainers (creature.trainer_id,
 * trainer_session.trainer_id) become BIGINT on MySQL/MariaDB, so that ids go on past 2^31 - 1
 * (trainer_session.id already was BIGINT). The foreign keys are dropped first and added again
 * after: MySQL refuses to change the type of a column a foreign key names. Each table is copied
 * once by its ALTER TABLE, and adding a foreign key again checks every row.
 *
 * SQLite: nothing to do. Its ids are INTEGER PRIMARY KEY columns, the table's own 64-bit row id,
 * and its INTEGER columns hold 64-bit values (the DataSource declares these columns INTEGER there,
 * see data-source.ts).
 */
export class BigIds1796200000000 implements MigrationInterface {
  name = 'BigIds1796200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query('ALTER TABLE `creature` DROP FOREIGN KEY `FK_creature_trainer`');
    await queryRunner.query('ALTER TABLE `trainer_session` DROP FOREIGN KEY `FK_trainer_session_trainer`');
    await queryRunner.query('ALTER TABLE `trainer` MODIFY `id` bigint NOT NULL AUTO_INCREMENT');
    await queryRunner.query('ALTER TABLE `creature` MODIFY `id` bigint NOT NULL AUTO_INCREMENT, MODIFY `trainer_id` bigint NOT NULL');
    await queryRunner.query('ALTER TABLE `trainer_session` MODIFY `trainer_id` bigint NOT NULL');
    await queryRunner.query(
      'ALTER TABLE `creature` ADD CONSTRAINT `FK_creature_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION',
    );
    await queryRunner.query(
      'ALTER TABLE `trainer_session` ADD CONSTRAINT `FK_trainer_session_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION',
    );
  }

  /**
   * Only while every id and trainer_id is at most 2^31 - 1: otherwise MySQL refuses to narrow the
   * column, after the foreign keys were dropped (they come back when a later run gets through).
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query('ALTER TABLE `creature` DROP FOREIGN KEY `FK_creature_trainer`');
    await queryRunner.query('ALTER TABLE `trainer_session` DROP FOREIGN KEY `FK_trainer_session_trainer`');
    await queryRunner.query('ALTER TABLE `trainer` MODIFY `id` int NOT NULL AUTO_INCREMENT');
    await queryRunner.query('ALTER TABLE `creature` MODIFY `id` int NOT NULL AUTO_INCREMENT, MODIFY `trainer_id` int NOT NULL');
    await queryRunner.query('ALTER TABLE `trainer_session` MODIFY `trainer_id` int NOT NULL');
    await queryRunner.query(
      'ALTER TABLE `creature` ADD CONSTRAINT `FK_creature_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION',
    );
    await queryRunner.query(
      'ALTER TABLE `trainer_session` ADD CONSTRAINT `FK_trainer_session_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION',
    );
  }
}
