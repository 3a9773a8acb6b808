import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The refresh token a session's last refresh spent, kept for a short grace (REFRESH_REUSE_GRACE):
 * `previous_hash` is the SHA-256 hash of its secret, `previous_until` when it stops being accepted.
 * Presented again before then (two tabs refreshing at once, a retry of a lost answer), it gets
 * the session's current pair instead of ending the session. Both are null until the first refresh.
 * Plain ADD COLUMNs of nullable columns: neither database copies the table for them.
 */
export class RefreshReuseGrace1796000000000 implements MigrationInterface {
  name = 'RefreshReuseGrace1796000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('ALTER TABLE "trainer_session" ADD COLUMN "previous_hash" varchar(43)');
      await queryRunner.query('ALTER TABLE "trainer_session" ADD COLUMN "previous_until" datetime(3)');
      return;
    }
    await queryRunner.query('ALTER TABLE `trainer_session` ADD `previous_hash` char(43) NULL, ADD `previous_until` datetime(3) NULL');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('ALTER TABLE "trainer_session" DROP COLUMN "previous_until"');
      await queryRunner.query('ALTER TABLE "trainer_session" DROP COLUMN "previous_hash"');
      return;
    }
    await queryRunner.query('ALTER TABLE `trainer_session` DROP COLUMN `previous_hash`, DROP COLUMN `previous_until`');
  }
}
