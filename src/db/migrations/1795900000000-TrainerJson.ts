import { TableColumn, type MigrationInterface, type QueryRunner } from 'typeorm';

/** The trainer's REST JSON after its id, as this migration stored it (frozen: written out, not imported). */
const TRAINER_JSON_TAIL =
  `CONCAT(',"nickname":', JSON_QUOTE(nickname), ',"firstName":', JSON_QUOTE(first_name), ',"lastName":', JSON_QUOTE(last_name),` +
  ` ',"team":', JSON_QUOTE(team), ',"creaturesOwned":', creatures_owned, ',"createdAt":"', REPLACE(CAST(created_at AS CHAR), ' ', 'T'), 'Z"')`;
const TRAINER_JSON_TAIL_LENGTH = 2600;

/**
 * `trainer.rest_json`: a stored generated column holding the trainer's REST JSON after its id
 * (`,"nickname":...,"createdAt":"...Z"`), which the database keeps for every write, the service's
 * and plain SQL alike (creature counts included: creatures_owned is one of its inputs). A REST
 * page then reads one column per trainer instead of building its JSON from seven: MariaDB's CPU
 * per REST list went from about 72 to 53 us (see bench/README). TypeORM records a generated
 * column's expression in its typeorm_metadata table, made here as its schema builder makes it.
 * SQLite cannot add a stored column in place: TypeORM copies the table (foreign keys are off
 * while migrations run). On MySQL/MariaDB the column is added by hand: TypeORM's definition ends
 * in NULL, which MariaDB refuses after a generated column; the metadata row is the one TypeORM
 * writes. MariaDB rebuilt a table of 100k trainers in about 1 s.
 */
export class TrainerJson1795900000000 implements MigrationInterface {
  name = 'TrainerJson1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const builder = queryRunner.connection.driver.createSchemaBuilder() as unknown as {
      createTypeormMetadataTable(runner: QueryRunner): Promise<void>;
    };
    await builder.createTypeormMetadataTable(queryRunner);
    if (queryRunner.connection.options.type !== 'better-sqlite3') {
      await queryRunner.query(
        `ALTER TABLE \`trainer\` ADD \`rest_json\` varchar(${TRAINER_JSON_TAIL_LENGTH}) AS (${TRAINER_JSON_TAIL}) STORED`,
      );
      await queryRunner.query(
        'INSERT INTO `typeorm_metadata` (`type`, `schema`, `table`, `name`, `value`) VALUES (?, DATABASE(), ?, ?, ?)',
        ['GENERATED_COLUMN', 'trainer', 'rest_json', TRAINER_JSON_TAIL],
      );
      return;
    }
    // Loaded afresh: the runner's copy of the table may predate columns added by plain SQL (CreatureCount).
    const table = await queryRunner.getTable('trainer');
    await queryRunner.addColumn(
      table!,
      new TableColumn({
        name: 'rest_json',
        type: 'varchar',
        length: String(TRAINER_JSON_TAIL_LENGTH),
        isNullable: true,
        generatedType: 'STORED',
        asExpression: TRAINER_JSON_TAIL,
      }),
    );
  }

  /**
   * By hand on both: TypeORM would copy the table on SQLite, and a revert turns foreign keys off
   * only inside its transaction, where SQLite ignores that, so dropping the old trainer table
   * would delete every creature (ON DELETE CASCADE).
   */
  async down(queryRunner: QueryRunner): Promise<void> {
    const sqlite = queryRunner.connection.options.type === 'better-sqlite3';
    await queryRunner.query(sqlite ? 'ALTER TABLE "trainer" DROP COLUMN "rest_json"' : 'ALTER TABLE `trainer` DROP COLUMN `rest_json`');
    await queryRunner.query(
      sqlite
        ? `DELETE FROM "typeorm_metadata" WHERE "type" = 'GENERATED_COLUMN' AND "table" = 'trainer' AND "name" = 'rest_json'`
        : "DELETE FROM `typeorm_metadata` WHERE `type` = 'GENERATED_COLUMN' AND `table` = 'trainer' AND `name` = 'rest_json'",
    );
  }
}
