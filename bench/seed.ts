// Bulk seeding for the benchmark: N trainers and M creatures (spread evenly), in large
// multi-row INSERTs, on MySQL or SQLite. Every trainer's password is BENCH_PASSWORD.
import Database from 'better-sqlite3';
import { createConnection } from 'mysql2/promise';
import { PasswordHasher } from '../src/auth/password';
import { loadDatabaseConfig } from '../src/config';
import { createDataSource } from '../src/db/data-source';
import { runMigrations } from '../src/db/migrate';
import { reconcileDatabase } from '../src/trainers/reconcile';

export const BENCH_PASSWORD = 'bench-password';
/** The trainer that gets the extra creatures of `heavy`: on the page at offset 200 of 100, not on the first. */
export const HEAVY_TRAINER = 250;
const TEAMS = ['VALOR', 'INSTINCT', 'MYSTIC'];
const BATCH = 5000;

const trainerRow = (i: number, hash: string, now: Date) => [
  `bench_${i}`,
  `bench_${i}`,
  `First${i}`,
  `Last${i}`,
  `bench${i}@bench.test`,
  hash,
  TEAMS[i % 3],
  now,
];

export interface SeedResult {
  trainers: number;
  creatures: number;
  seconds: number;
}

/**
 * Creates the schema (migrations) and fills it; the database must be empty. HEAVY_TRAINER gets
 * `heavy` creatures more than the others (when there is such a trainer).
 */
export async function seed(databaseUrl: string, trainers: number, creatures: number, heavy = 0): Promise<SeedResult> {
  const started = Date.now();
  const dataSource = createDataSource(loadDatabaseConfig({ DATABASE_URL: databaseUrl }));
  await dataSource.initialize();
  await runMigrations(dataSource);
  await dataSource.destroy();

  const hash = await new PasswordHasher().hash(BENCH_PASSWORD);
  const now = new Date();
  const perTrainer = Math.floor(creatures / trainers);
  const extra = creatures - perTrainer * trainers;
  const creatureRows = function* () {
    for (let t = 1; t <= trainers; t += 1) {
      const count = perTrainer + (t <= extra ? 1 : 0) + (t === HEAVY_TRAINER ? heavy : 0);
      for (let c = 0; c < count; c += 1) yield [`Creature ${c}`, `creature ${c}`, ((t * 31 + c * 7) % 1000) + 1, (c % 100) + 1, t, now];
    }
  };

  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    const iso = now.toISOString().replace('T', ' ').replace('Z', '');
    const insertTrainer = db.prepare(
      'INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insertCreature = db.prepare(
      'INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    db.transaction(() => {
      for (let i = 1; i <= trainers; i += 1) insertTrainer.run(...trainerRow(i, hash, now).slice(0, 7), iso);
      for (const row of creatureRows()) insertCreature.run(...row.slice(0, 5), iso);
    })();
    db.close();
  } else {
    const connection = await createConnection({ uri: databaseUrl, timezone: 'Z' });
    try {
      let rows: unknown[][] = [];
      const flush = async (sql: string) => {
        if (rows.length) await connection.query(sql, [rows]);
        rows = [];
      };
      const trainerSql =
        'INSERT INTO trainer (nickname, nickname_key, first_name, last_name, email, password_hash, team, created_at) VALUES ?';
      for (let i = 1; i <= trainers; i += 1) {
        rows.push(trainerRow(i, hash, now));
        if (rows.length === BATCH) await flush(trainerSql);
      }
      await flush(trainerSql);
      const creatureSql = 'INSERT INTO creature (name, name_key, species_id, level, trainer_id, created_at) VALUES ?';
      for (const row of creatureRows()) {
        rows.push(row);
        if (rows.length === BATCH) await flush(creatureSql);
      }
      await flush(creatureSql);
    } finally {
      await connection.end();
    }
  }
  // As an operator's import ends: what the service keeps in each write (counts, search suffixes) made exact.
  await reconcileDatabase(loadDatabaseConfig({ DATABASE_URL: databaseUrl }), { info: () => undefined });
  return { trainers, creatures, seconds: (Date.now() - started) / 1000 };
}
