import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { buildApp, type BuildOptions } from '../../src/app';
import { loadConfig, loadDatabaseConfig, type Config, type DatabaseConfig } from '../../src/config';
import { reconcileDatabase, type Reconciled, type ReconcileOptions } from '../../src/trainers/reconcile';
import { mysqlServerUrl } from './mysql';

export type DatabaseKind = 'sqlite' | 'mysql';

/** The databases every integration suite runs on (see global-setup.ts for when MySQL is left out). */
export const databases: DatabaseKind[] = process.env.REGISTRY_TEST_MYSQL === 'off' ? ['sqlite'] : ['sqlite', 'mysql'];

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

export interface TestApp {
  readonly app: FastifyInstance;
  readonly config: Config;
  readonly kind: DatabaseKind;
  close(): Promise<void>;
}

/** A fresh database of the given kind, and its URL; `drop` removes it. */
export async function createTestDatabase(kind: DatabaseKind): Promise<{ url: string; drop(): Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'registry-test-'));
    return { url: `sqlite:${join(dir, 'registry.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const server = mysqlServerUrl();
  const name = `registry_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = await createConnection({ uri: server });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  return {
    url: `${server}/${name}`,
    drop: async () => {
      const conn = await createConnection({ uri: server });
      await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await conn.end();
    },
  };
}

export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    JWT_SECRET: TEST_JWT_SECRET,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Suites register many trainers from one address; the registration limit has its own test.
    REGISTER_IP_PER_HOUR: '1000000',
    // Refusals answered at once; the tarpit has its own test.
    RATE_LIMITED_DELAY_MS: '0',
    ...env,
  });
}

/** Several instances of the app on one new database, as behind a load balancer. */
export async function startTestInstances(
  kind: DatabaseKind,
  count: number,
  env: Record<string, string> = {},
): Promise<{ apps: FastifyInstance[]; url: string; close(): Promise<void> }> {
  const database = await createTestDatabase(kind);
  const apps: FastifyInstance[] = [];
  for (let i = 0; i < count; i += 1) apps.push(await buildApp(testConfig(database.url, env)));
  return {
    apps,
    url: database.url,
    async close() {
      for (const app of apps) await app.close();
      await database.drop();
    },
  };
}

/** Makes the app listen on a free port of 127.0.0.1 (for real clients: a browser, curl) and returns its origin. */
export async function listen(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/** A real app on a new database of its own. */
export async function startTestApp(kind: DatabaseKind, env: Record<string, string> = {}, options: BuildOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase(kind);
  const config = testConfig(database.url, env);
  const app = await buildApp(config, options);
  return {
    app,
    config,
    kind,
    async close() {
      await app.close();
      await database.drop();
    },
  };
}

/**
 * `npm run reconcile` against the database at `url`, as the command runs it: a process's own
 * connection (here a DataSource of its own), beside the instances that serve.
 */
export function runReconcile(database: string | DatabaseConfig, options: ReconcileOptions = {}): Promise<Reconciled> {
  return reconcileDatabase(
    typeof database === 'string' ? loadDatabaseConfig({ DATABASE_URL: database }) : database,
    { info: () => undefined },
    options,
  );
}
