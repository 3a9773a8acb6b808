import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index on trainer.id alone, for pages by offset. InnoDB's primary key is the clustered
 * index, whose leaves hold whole rows; skipping many trainers through this narrow index reads
 * far fewer pages than skipping them through the primary key.
 * MySQL still prefers the primary key for `ORDER BY id`, so the page query names it
 * (TrainerService.pageRows). SQLite gets the same index so both schemas stay one.
 */
export class AddTrainerIdIndex1795400000000 implements MigrationInterface {
  name = 'AddTrainerIdIndex1795400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(`CREATE INDEX "IX_trainer_id" ON "trainer" ("id")`);
      return;
    }
    await queryRunner.query('CREATE INDEX `IX_trainer_id` ON `trainer` (`id`)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(`DROP INDEX "IX_trainer_id"`);
      return;
    }
    await queryRunner.query('DROP INDEX `IX_trainer_id` ON `trainer`');
  }
}
