import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sessions: one row per sign-in, named by the access tokens' `sid` claim. A refresh token is
 * `<family>.<secret>`; the row keeps the SHA-256 hashes of the family part (fixed for the
 * session's life, unique) and of the current secret (replaced by each refresh). Presenting the
 * family with any other secret means a spent token came back, so the session ends. Deleting the
 * row (logout, a replay, the cap per trainer, expiry) ends its access tokens at once too.
 *
 * Access tokens issued before this migration carry no `sid` and are refused from now on.
 */
export class Sessions1795600000000 implements MigrationInterface {
  name = 'Sessions1795600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query(
        `CREATE TABLE "trainer_session" ("id" integer PRIMARY KEY AUTOINCREMENT NOT NULL, "trainer_id" integer NOT NULL, "family_hash" varchar(43) NOT NULL, "token_hash" varchar(43) NOT NULL, "created_at" datetime(3) NOT NULL, "expires_at" datetime(3) NOT NULL, CONSTRAINT "FK_trainer_session_trainer" FOREIGN KEY ("trainer_id") REFERENCES "trainer" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`,
      );
      await queryRunner.query(`CREATE UNIQUE INDEX "UQ_trainer_session_family" ON "trainer_session" ("family_hash")`);
      await queryRunner.query(`CREATE INDEX "IX_trainer_session_trainer" ON "trainer_session" ("trainer_id")`);
      await queryRunner.query(`CREATE INDEX "IX_trainer_session_expires" ON "trainer_session" ("expires_at")`);
      return;
    }
    await queryRunner.query(
      'CREATE TABLE `trainer_session` (`id` bigint NOT NULL AUTO_INCREMENT, `trainer_id` int NOT NULL, `family_hash` char(43) NOT NULL, `token_hash` char(43) NOT NULL, `created_at` datetime(3) NOT NULL, `expires_at` datetime(3) NOT NULL, PRIMARY KEY (`id`), UNIQUE INDEX `UQ_trainer_session_family` (`family_hash`), INDEX `IX_trainer_session_trainer` (`trainer_id`), INDEX `IX_trainer_session_expires` (`expires_at`), CONSTRAINT `FK_trainer_session_trainer` FOREIGN KEY (`trainer_id`) REFERENCES `trainer` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE trainer_session');
  }
}
