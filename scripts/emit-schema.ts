// `npm run schema`: writes schema.graphql from the resolvers. It refuses a breaking change that
// docs/api-changes.md does not record; the test suite fails when the committed file is stale.
import 'reflect-metadata';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildGraphQLSchema, printSchemaSDL } from '../src/graphql/schema';
import { graphqlBreakingChanges, refuseUnrecorded, ROOT } from './api-changes';

async function main(): Promise<void> {
  const target = join(ROOT, 'schema.graphql');
  const emitted = printSchemaSDL(await buildGraphQLSchema());
  if (existsSync(target)) refuseUnrecorded('schema.graphql', graphqlBreakingChanges(readFileSync(target, 'utf8'), emitted));
  writeFileSync(target, emitted);
  process.stdout.write(`wrote ${target}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
