import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `replica_heartbeat` (MySQL/MariaDB only; SQLite has no replicas): the one-row table whose time
 * the primary writes and each read replica is asked the age of (src/db/replicas.ts), to measure
 * its lag. Made by the service itself at run time before this migration, hence IF NOT EXISTS.
 */
export class ReplicaHeartbeat1796500000000 implements MigrationInterface {
  name = 'ReplicaHeartbeat1796500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query(
      'CREATE TABLE IF NOT EXISTS `replica_heartbeat` (`id` TINYINT UNSIGNED NOT NULL PRIMARY KEY, `beat_at` DATETIME(3) NOT NULL)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') return;
    await queryRunner.query('DROP TABLE IF EXISTS `replica_heartbeat`');
  }
}
