import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sessions: one row per sign-in, named by the access tokens' `sid` claim, and the refresh tokens
 * of each, stored only as SHA-256 hashes. `generation` counts the session's refreshes: a refresh
 * token of an older generation than its session's has been spent, so presenting it again is a
 * replay. Deleting a session (logout, a replay, the cap per trainer, expiry) deletes its refresh
 * tokens with it, and the caller check stops accepting its access tokens at once.
 *
 * Access tokens issued before this migration carry no `sid` and are refused from now on.
 */
export class Sessions1795600000000 implements MigrationInterface {
  name = 'Sessions1795600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(
        `CREATE TABLE "trainer_session" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "trainer_id" integer NOT NULL, "generation" integer NOT NULL, "created_at" datetime(3) NOT NULL, "expires_at" datetime(3) NOT NULL, CONSTRAINT "FK_trainer_session_trainer" FOREIGN KEY ("trainer_id") REFERENCES "trainer" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`,
      );
      await queryRunner.query(`CREATE INDEX "IX_trainer_session_trainer" ON "trainer_session" ("trainer_id")`);
      await queryRunner.query(`CREATE INDEX "IX_trainer_session_expires" ON "trainer_session" ("expires_at")`);
      await queryRunner.query(
        `CREATE TABLE "refresh_token" ("token_hash" varchar(43) PRIMARY KEY NOT NULL, "session_id" integer NOT NULL, "generation" integer NOT NULL, CONSTRAINT "FK_refresh_token_session" FOREIGN KEY ("session_id") REFERENCES "trainer_session" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`,
      );
      await queryRunner.query(`CREATE INDEX "IX_refresh_token_session" ON "refresh_token" ("session_id", "generation")`);
      return;
    }
    await queryRunner.query(
      'CREATE TABLE `trainer_session` (`id` bigint NOT NULL AUTO_INCREMENT, `trainer_id` int NOT NULL, `generation` int NOT NULL, `created_at` datetime(3) NOT NULL, `expires_at` datetime(3) NOT NULL, PRIMARY KEY (`id`), INDEX `IX_trainer_session_trainer` (`trainer_id`), INDEX `IX_trainer_session_expires` (`expires_at`), CONSTRAINT `FK_trainer_session_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'CREATE TABLE `refresh_token` (`token_hash` char(43) NOT NULL, `session_id` bigint NOT NULL, `generation` int NOT NULL, PRIMARY KEY (`token_hash`), INDEX `IX_refresh_token_session` (`session_id`, `generation`), CONSTRAINT `FK_refresh_token_session` FOREIGN KEY (`session_id`) REFERENCES `trainer_session` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE refresh_token');
    await queryRunner.query('DROP TABLE trainer_session');
  }
}
