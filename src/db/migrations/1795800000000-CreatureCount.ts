import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each trainer keeps the number of its creatures in its own row (`creatures_owned`), changed in
 * the transaction of every creature create and delete (the one that already counts its events),
 * so that reading counts reads a column instead of counting index entries, which cost the
 * database more for every page of trainers with their counts. Rows changed
 * by plain SQL are counted again by `npm run reconcile`.
 */
export class CreatureCount1795800000000 implements MigrationInterface {
  name = 'CreatureCount1795800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('ALTER TABLE "trainer" ADD COLUMN "creatures_owned" integer NOT NULL DEFAULT (0)');
    } else {
      await queryRunner.query('ALTER TABLE `trainer` ADD `creatures_owned` int NOT NULL DEFAULT 0');
    }
    await queryRunner.query('UPDATE trainer SET creatures_owned = (SELECT COUNT(*) FROM creature c WHERE c.trainer_id = trainer.id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE trainer DROP COLUMN creatures_owned');
  }
}
