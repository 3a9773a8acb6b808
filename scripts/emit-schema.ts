// `npm run schema`: writes schema.graphql from the resolvers. The test suite fails when the
// committed file differs from what the code emits.
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildGraphQLSchema, printSchemaSDL } from '../src/graphql/schema';

async function main(): Promise<void> {
  const target = join(__dirname, '..', 'schema.graphql');
  writeFileSync(target, printSchemaSDL(await buildGraphQLSchema()));
  process.stdout.write(`wrote ${target}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
