import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildGraphQLSchema, printSchemaSDL } from '../../src/graphql/schema';
import { createDataSource } from '../../src/db/data-source';
import { runMigrations } from '../../src/db/migrate';
import { loadDatabaseConfig } from '../../src/config';
import { createTestDatabase, databases } from '../helpers/app';

const root = join(__dirname, '..', '..');

describe('schema.graphql', () => {
  it('is exactly what the resolvers emit (run `npm run schema` after changing them)', async () => {
    const committed = readFileSync(join(root, 'schema.graphql'), 'utf8');
    expect(committed).toBe(printSchemaSDL(await buildGraphQLSchema()));
  });

  it('keeps the public contract (../shared/tools/contract-check.mjs)', () => {
    const output = execFileSync(process.execPath, [join(root, '..', 'shared', 'tools', 'contract-check.mjs')], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(output).toContain('schema keeps the contract');
  });
});

describe.each(databases)('migrations on %s', (kind) => {
  it('build exactly the schema the entities describe, and run twice without change', async () => {
    const database = await createTestDatabase(kind);
    const dataSource = createDataSource(loadDatabaseConfig({ DATABASE_URL: database.url }));
    try {
      await dataSource.initialize();
      await runMigrations(dataSource);
      await runMigrations(dataSource);
      const pending = await dataSource.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((q) => q.query)).toEqual([]);
      expect(await dataSource.showMigrations()).toBe(false);
    } finally {
      await dataSource.destroy();
      await database.drop();
    }
  });
});
