import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Trainer lists answered by the database's own indexes instead of a copy of the table kept in
 * every process:
 * - `IX_trainer_team_id` (team, id): a team's page walks its stretch of the index in id order.
 * - `trainer_count`: how many trainers of each team there are, in buckets of 65,536 ids; the
 *   service changes a bucket's row in the transaction of each registration, `npm run reconcile`
 *   recounts one bucket at a time after rows were changed by plain SQL. A total is the sum of a
 *   few rows.
 * - `trainer_nickname_suffix`: every suffix of two characters or more of each nickname key, kept
 *   in the transaction of each write: a `nicknameContains` search is one range of its primary key
 *   (the suffixes that start with the text), as long as the matches, whatever the table's size.
 *   No foreign key: trainer ids may be 32- or 64-bit here, and the service removes them itself.
 * - `rest_json` goes: the REST answer is written by the service from its schema.
 * Both new tables are filled from the trainers there are (once, as this migration runs). Frozen:
 * literal SQL only, as every migration.
 */

/** Positions 1..31 in a nickname key (at most 32 characters): where its suffixes of 2 or more start. */
const POSITIONS = Array.from({ length: 31 }, (_, i) => `SELECT ${i + 1} AS n`).join(' UNION ALL ');

export class ListsByIndex1796300000000 implements MigrationInterface {
  name = 'ListsByIndex1796300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      await queryRunner.query('ALTER TABLE "trainer" DROP COLUMN "rest_json"');
      await queryRunner.query(
        `DELETE FROM "typeorm_metadata" WHERE "type" = 'GENERATED_COLUMN' AND "table" = 'trainer' AND "name" = 'rest_json'`,
      );
      await queryRunner.query('CREATE INDEX "IX_trainer_team_id" ON "trainer" ("team", "id")');
      await queryRunner.query(
        'CREATE TABLE "trainer_count" ("bucket" integer NOT NULL, "team" varchar(8) NOT NULL, "n" integer NOT NULL, PRIMARY KEY ("bucket", "team")) WITHOUT ROWID',
      );
      await queryRunner.query(
        'CREATE TABLE "trainer_nickname_suffix" ("suffix" varchar(32) NOT NULL, "trainer_id" integer NOT NULL, PRIMARY KEY ("suffix", "trainer_id")) WITHOUT ROWID',
      );
      await queryRunner.query('CREATE INDEX "IX_trainer_nickname_suffix_trainer" ON "trainer_nickname_suffix" ("trainer_id")');
      await queryRunner.query(
        'INSERT INTO "trainer_count" ("bucket", "team", "n") SELECT "id" / 65536, "team", COUNT(*) FROM "trainer" GROUP BY "id" / 65536, "team"',
      );
      await queryRunner.query(
        `INSERT INTO "trainer_nickname_suffix" ("suffix", "trainer_id") SELECT substr(t."nickname_key", p.n), t."id" FROM "trainer" t JOIN (${POSITIONS}) p ON p.n < length(t."nickname_key")`,
      );
      return;
    }
    await queryRunner.query('ALTER TABLE `trainer` DROP COLUMN `rest_json`, ADD INDEX `IX_trainer_team_id` (`team`, `id`)');
    await queryRunner.query(
      "DELETE FROM `typeorm_metadata` WHERE `type` = 'GENERATED_COLUMN' AND `table` = 'trainer' AND `name` = 'rest_json'",
    );
    await queryRunner.query(
      'CREATE TABLE `trainer_count` (`bucket` bigint NOT NULL, `team` varchar(8) NOT NULL, `n` bigint NOT NULL, PRIMARY KEY (`bucket`, `team`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'CREATE TABLE `trainer_nickname_suffix` (`suffix` varchar(32) NOT NULL, `trainer_id` bigint NOT NULL, PRIMARY KEY (`suffix`, `trainer_id`), INDEX `IX_trainer_nickname_suffix_trainer` (`trainer_id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin',
    );
    await queryRunner.query(
      'INSERT INTO `trainer_count` (`bucket`, `team`, `n`) SELECT `id` DIV 65536, `team`, COUNT(*) FROM `trainer` GROUP BY `id` DIV 65536, `team`',
    );
    await queryRunner.query(
      `INSERT INTO \`trainer_nickname_suffix\` (\`suffix\`, \`trainer_id\`) SELECT SUBSTRING(t.\`nickname_key\`, p.n), t.\`id\` FROM \`trainer\` t JOIN (${POSITIONS}) p ON p.n < CHAR_LENGTH(t.\`nickname_key\`)`,
    );
  }

  /** The tables and the index go; `rest_json` comes back as the TrainerJson migration made it. */
  async down(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.options.type === 'better-sqlite3';
    const q = (name: string) => (sqlite ? `"${name}"` : `\`${name}\``);
    await queryRunner.query(`DROP TABLE ${q('trainer_nickname_suffix')}`);
    await queryRunner.query(`DROP TABLE ${q('trainer_count')}`);
    await queryRunner.query(sqlite ? 'DROP INDEX "IX_trainer_team_id"' : 'ALTER TABLE `trainer` DROP INDEX `IX_trainer_team_id`');
    const tail =
      `CONCAT(',"nickname":', JSON_QUOTE(nickname), ',"firstName":', JSON_QUOTE(first_name), ',"lastName":', JSON_QUOTE(last_name),` +
      ` ',"team":', JSON_QUOTE(team), ',"creaturesOwned":', creatures_owned, ',"createdAt":"', REPLACE(CAST(created_at AS CHAR), ' ', 'T'), 'Z"')`;
    if (sqlite) {
      // SQLite cannot add a stored column in place: a virtual one serves what a revert needs.
      await queryRunner.query(`ALTER TABLE "trainer" ADD COLUMN "rest_json" varchar(2600) AS (${tail}) VIRTUAL`);
    } else {
      await queryRunner.query(`ALTER TABLE \`trainer\` ADD \`rest_json\` varchar(2600) AS (${tail}) STORED`);
    }
    await queryRunner.query(
      `INSERT INTO ${q('typeorm_metadata')} (${q('type')}, ${q('schema')}, ${q('table')}, ${q('name')}, ${q('value')}) VALUES (?, ${sqlite ? 'NULL' : 'DATABASE()'}, ?, ?, ?)`,
      ['GENERATED_COLUMN', 'trainer', 'rest_json', tail],
    );
  }
}
