import type { DataSource } from 'typeorm';
import { loadDatabaseConfig } from '../../src/config';
import { createDataSource, QUERY_TIMEOUT_MS } from '../../src/db/data-source';
import { runMigrations } from '../../src/db/migrate';
import { Sql, type SqlLimits } from '../../src/db/sql';
import { createTestDatabase } from './app';

/** A migrated SQLite file of a test's own, opened as the app opens it, without an app. */
export interface TestDatabase {
  /** The DATABASE_URL of the file, for other connections to it. */
  readonly url: string;
  readonly dataSource: DataSource;
  /** The app's statement layer over `dataSource`. */
  readonly sql: Sql;
  /** Every statement sent through `dataSource`, in order (its logger's, as the app counts them). */
  readonly statements: string[];
  /** Another connection to the same file (a process beside the app: `npm run reconcile`), closed with the database. */
  connect(): Promise<DataSource>;
  close(): Promise<void>;
}

/** A new SQLite file (createTestDatabase), migrated; `limits` as the Sql's (SqlLimits, e.g. its retry policy). */
export async function openTestDatabase(limits: Partial<SqlLimits> = {}): Promise<TestDatabase> {
  const database = await createTestDatabase('sqlite');
  const statements: string[] = [];
  const config = loadDatabaseConfig({ DATABASE_URL: database.url });
  const dataSource = await createDataSource(config, { onQuery: (sql) => statements.push(sql) }).initialize();
  await runMigrations(dataSource);
  statements.length = 0;
  const others: DataSource[] = [];
  return {
    url: database.url,
    dataSource,
    sql: new Sql(dataSource, { timeoutMs: QUERY_TIMEOUT_MS, slowMs: 10_000, ...limits }),
    statements,
    async connect() {
      const other = await createDataSource(config).initialize();
      others.push(other);
      return other;
    },
    async close() {
      for (const other of others) if (other.isInitialized) await other.destroy();
      await dataSource.destroy();
      await database.drop();
    },
  };
}
