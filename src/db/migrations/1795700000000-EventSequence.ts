import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Live events: each trainer counts the events of its creatures. Every create, update and delete
 * of a creature adds one in its own transaction, which also locks the trainer's row, so the
 * numbers follow the order the writes committed in. Subscribers on any instance deliver a
 * trainer's events in that order (see CreatureEventBus).
 */
export class EventSequence1795700000000 implements MigrationInterface {
  name = 'EventSequence1795700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('ALTER TABLE "trainer" ADD COLUMN "event_seq" bigint NOT NULL DEFAULT (0)');
      return;
    }
    await queryRunner.query('ALTER TABLE `trainer` ADD `event_seq` bigint NOT NULL DEFAULT 0');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE trainer DROP COLUMN event_seq');
  }
}
