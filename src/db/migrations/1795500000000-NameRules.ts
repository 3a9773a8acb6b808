import type { MigrationInterface, QueryRunner } from 'typeorm';
import { TableColumn } from 'typeorm';

/*
 * Frozen as this migration first ran: its widths and its name key are written out here, so that
 * a later change to the application's rules cannot change what it does.
 */
const CREATURE_NAME_WIDTH = 96;
const NAME_KEY_WIDTH = 600;
const TRAINER_NAME_WIDTH = 192;
const DOTLESS_I = '\u0131';

/** The name key of this migration: NFKC, full case folding (upper- then lower-casing, `ı` kept, `ς` as `σ`), NFKC. */
function nameKey(value: string): string {
  let key = value.trim().normalize('NFKC');
  for (let round = 0; round < 4; round += 1) {
    const next = key
      .split(DOTLESS_I)
      .map((part) => part.toUpperCase().toLowerCase())
      .join(DOTLESS_I)
      .normalize('NFKC');
    if (next === key) break;
    key = next;
  }
  return key.replaceAll('\u03C2', '\u03C3');
}

interface Row {
  readonly id: number;
  readonly trainer_id: number;
  readonly name: string;
  readonly name_key: string;
}

const TRAINERS_PER_BATCH = 2000;

/** Gives `rows` (every creature of some trainers) their new keys, keeping both where two became one name. */
async function rekey(queryRunner: QueryRunner, rows: readonly Row[]): Promise<void> {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    const group = `${row.trainer_id}\u0000${nameKey(row.name)}`;
    groups.set(group, [...(groups.get(group) ?? []), row]);
  }
  const changes: { id: number; key: string }[] = [];
  for (const group of groups.values()) {
    const key = nameKey(group[0].name);
    const keeper = group.find((row) => row.name_key === key) ?? group[0];
    for (const row of group) {
      const wanted = row === keeper ? key : collidedKey(key, row.id);
      if (row.name_key !== wanted) changes.push({ id: row.id, key: wanted });
    }
    if (group.length > 1) {
      const others = group.filter((row) => row !== keeper).map((row) => `${row.id} "${row.name}"`);
      queryRunner.connection.logger.log(
        'warn',
        `creature names: trainer ${keeper.trainer_id} has creatures that are now the same name; ` +
          `${keeper.id} "${keeper.name}" keeps it, kept under keys of their own: ${others.join(', ')}`,
      );
    }
  }
  // Two passes, so that no key is ever held twice on the way (a unique index checks every row).
  for (const { id } of changes) await queryRunner.query('UPDATE creature SET name_key = ? WHERE id = ?', [`\u0000${id}`, id]);
  for (const { id, key } of changes) await queryRunner.query('UPDATE creature SET name_key = ? WHERE id = ?', [key, id]);
}

/** What a creature that lost its key to an older one is keyed by: never the key of a valid name (no control characters). */
export const collidedKey = (key: string, id: number): string => `${key}\u0000${id}`;

/**
 * Names are counted as sent and stored in NFC, which can make them up to three times longer:
 * creature.name, trainer.first_name and trainer.last_name are widened to three times their length.
 *
 * Creature names become the same name when their NFKC, fully case-folded keys are equal
 * (`ẞ`, `ß`, `ss`; `ﬀ`, `ff`; full-width letters): name_key is recomputed for every creature,
 * and widened for keys that NFKC lengthens (18 code points for one, at most).
 *
 * Two creatures of one trainer that were different names before and are the same name now are
 * both kept: the one already holding the key (else the older one) keeps it, the others get a key
 * of their own (collidedKey) so that nothing is lost, and a warning names them. A new creature of
 * that name is refused as a duplicate either way; renaming one of them gives it a normal key.
 */
export class NameRules1795500000000 implements MigrationInterface {
  name = 'NameRules1795500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const widths = [
      ['creature', 'name', CREATURE_NAME_WIDTH],
      ['creature', 'name_key', NAME_KEY_WIDTH],
      ['trainer', 'first_name', TRAINER_NAME_WIDTH],
      ['trainer', 'last_name', TRAINER_NAME_WIDTH],
    ] as const;
    if (queryRunner.connection.options.type === 'better-sqlite3') {
      // SQLite cannot alter a column: TypeORM copies the table into a new one, indexes included
      // (foreign keys are off while migrations run, so copying trainer cascades nothing).
      for (const [table, name, length] of widths) {
        await queryRunner.changeColumn(table, name, new TableColumn({ name, type: 'varchar', length: String(length), isNullable: false }));
      }
    } else {
      // Not changeColumn: for a new length, TypeORM's MySQL runner drops the column and adds it again.
      for (const [table, name, length] of widths) {
        await queryRunner.query(`ALTER TABLE \`${table}\` MODIFY \`${name}\` varchar(${length}) NOT NULL`);
      }
    }
    // Whole trainers at a time (uniqueness is per trainer), so that memory stays bounded at any size.
    const [{ last }] = (await queryRunner.query('SELECT MAX(trainer_id) AS last FROM creature')) as { last: number | string | null }[];
    for (let from = 0; from < Number(last ?? 0); from += TRAINERS_PER_BATCH) {
      const rows = (await queryRunner.query(
        'SELECT id, trainer_id, name, name_key FROM creature WHERE trainer_id > ? AND trainer_id <= ? ORDER BY id',
        [from, from + TRAINERS_PER_BATCH],
      )) as Row[];
      await rekey(queryRunner, rows);
    }
  }

  async down(): Promise<void> {
    // The old keys merged fewer names; the new ones stay valid keys for the old code (unique per trainer).
  }
}
