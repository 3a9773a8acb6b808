import type { MigrationInterface, QueryRunner } from 'typeorm';

/*
 * Frozen: this file imports nothing from the application, so that what it does to stored rows
 * never changes when the application's rules change later.
 */

interface Row {
  readonly id: number;
  readonly trainer_id: number;
  readonly name: string;
  readonly name_key: string;
}

const TRAINERS_PER_BATCH = 2000;

const DOTLESS_I = '\u0131';
/** Variation selectors and tag characters: they change nothing a reader sees. */
const INVISIBLE = /[\uFE00-\uFE0F]|[\u{E0000}-\u{E007F}]|[\u{E0100}-\u{E01EF}]/gu;

/**
 * A creature name's key as of this migration: variation selectors and tag characters dropped,
 * trimmed, then NFKC, full case folding (upper- then lower-casing until nothing changes, the
 * dotless ı kept, final ς as σ) and NFKC again. The same as nameKey in src/common/text.ts when
 * this was written (test/integration/names.test.ts compares them).
 */
export function frozenNameKey(name: string): string {
  let key = name.replace(INVISIBLE, '').trim().normalize('NFKC');
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

/** The key of a creature whose name became an older one's, as the NameRules migration makes it. */
const collidedKey = (key: string, id: number): string => `${key}\u0000${id}`;

/** Gives `rows` (every creature of some trainers) their keys; how many changed. */
async function rekey(queryRunner: QueryRunner, rows: readonly Row[]): Promise<number> {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    const group = `${row.trainer_id}\u0000${frozenNameKey(row.name)}`;
    groups.set(group, [...(groups.get(group) ?? []), row]);
  }
  const changes: { id: number; key: string }[] = [];
  for (const group of groups.values()) {
    const key = frozenNameKey(group[0].name);
    const keeper = group.find((row) => row.name_key === key) ?? group[0];
    const before = changes.length;
    for (const row of group) {
      const wanted = row === keeper ? key : collidedKey(key, row.id);
      if (row.name_key !== wanted) changes.push({ id: row.id, key: wanted });
    }
    // Said once: a group NameRules already kept apart, unchanged here, is not reported again.
    if (group.length > 1 && changes.length > before) {
      const others = group.filter((row) => row !== keeper).map((row) => `${row.id} ${JSON.stringify(row.name)}`);
      queryRunner.connection.logger.log(
        'warn',
        `creature names: trainer ${keeper.trainer_id} has creatures that are the same name without variation selectors or tag characters; ` +
          `${keeper.id} ${JSON.stringify(keeper.name)} keeps it, kept under keys of their own: ${others.join(', ')}`,
      );
    }
  }
  // Two passes, so that no key is ever held twice on the way (a unique index checks every row).
  for (const { id } of changes) await queryRunner.query('UPDATE creature SET name_key = ? WHERE id = ?', [`\u0000${id}`, id]);
  for (const { id, key } of changes) await queryRunner.query('UPDATE creature SET name_key = ? WHERE id = ?', [key, id]);
  return changes.length;
}

/**
 * Variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF) and tag characters (U+E0000..U+E007F)
 * are no longer part of a creature name's identity: `Mew`, `Mew` + U+FE00 and `Mew` + U+E0100
 * look the same and are one name. New names may not hold them at all; this recomputes name_key
 * for every stored creature without them.
 *
 * As in NameRules: two creatures of one trainer that are now one name are both kept; the one
 * already holding the key (else the older one) keeps it, the others get a key of their own, and
 * a warning names them. A warning also says how many keys changed. Names are not touched.
 */
export class NameKeysWithoutSelectors1796100000000 implements MigrationInterface {
  name = 'NameKeysWithoutSelectors1796100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Whole trainers at a time (uniqueness is per trainer), so that memory stays bounded at any size.
    const [{ last }] = (await queryRunner.query('SELECT MAX(trainer_id) AS last FROM creature')) as { last: number | string | null }[];
    let changed = 0;
    for (let from = 0; from < Number(last ?? 0); from += TRAINERS_PER_BATCH) {
      const rows = (await queryRunner.query(
        'SELECT id, trainer_id, name, name_key FROM creature WHERE trainer_id > ? AND trainer_id <= ? ORDER BY id',
        [from, from + TRAINERS_PER_BATCH],
      )) as Row[];
      changed += await rekey(queryRunner, rows);
    }
    if (changed > 0) {
      queryRunner.connection.logger.log(
        'warn',
        `creature names: ${changed} name keys recomputed without variation selectors or tag characters (the names are kept as stored)`,
      );
    }
  }

  async down(): Promise<void> {
    // The new keys merge more names; they stay valid keys for the old code (unique per trainer).
  }
}
