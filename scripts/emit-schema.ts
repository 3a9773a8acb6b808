// `npm run schema`: writes schema.graphql from the resolvers, and subgraph.graphql, the SDL the
// service answers as a Federation subgraph (FEDERATION=true). It refuses a breaking change to
// schema.graphql that docs/api-changes.md does not record; the test suite fails when either
// committed file is stale.
import 'reflect-metadata';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSubgraph, subgraphSDL } from '../src/graphql/federation';
import { buildGraphQLSchema, printSchemaSDL } from '../src/graphql/schema';
import { graphqlBreakingChanges, refuseUnrecorded, ROOT } from './api-changes';

async function main(): Promise<void> {
  const target = join(ROOT, 'schema.graphql');
  const schema = await buildGraphQLSchema();
  const emitted = printSchemaSDL(schema);
  if (existsSync(target)) refuseUnrecorded('schema.graphql', graphqlBreakingChanges(readFileSync(target, 'utf8'), emitted));
  writeFileSync(target, emitted);
  process.stdout.write(`wrote ${target}\n`);
  const subgraph = join(ROOT, 'subgraph.graphql');
  writeFileSync(subgraph, await subgraphSDL(buildSubgraph(schema)));
  process.stdout.write(`wrote ${subgraph}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
