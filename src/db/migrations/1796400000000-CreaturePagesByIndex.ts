import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index on creature (trainer_id, id): a page of one trainer's creatures, oldest first, walks
 * `offset + limit` entries of it instead of reading and sorting every creature of the trainer
 * (the unique (trainer_id, name_key) index orders them by name). Built online on MySQL/MariaDB
 * (InnoDB adds a secondary index without blocking writes).
 */
export class CreaturePagesByIndex1796400000000 implements MigrationInterface {
  name = 'CreaturePagesByIndex1796400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('CREATE INDEX "IX_creature_trainer_id" ON "creature" ("trainer_id", "id")');
      return;
    }
    await queryRunner.query('ALTER TABLE `creature` ADD INDEX `IX_creature_trainer_id` (`trainer_id`, `id`), ALGORITHM=INPLACE, LOCK=NONE');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('DROP INDEX "IX_creature_trainer_id"');
      return;
    }
    await queryRunner.query('DROP INDEX `IX_creature_trainer_id` ON `creature`');
  }
}
