// Runs graphql-codegen's client preset with `persistedDocuments: true` over the fixture documents
// into the folder given, as a frontend's build would: codegen's own library
// (`@graphql-codegen/core` and the preset's `buildGeneratesSection`), called the way its CLI
// does, with the CLI's defaults (schema sorted, documents' text trimmed). It runs in a process of
// its own because the preset loads ES modules, which Jest's module loader does not.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codegen } from '@graphql-codegen/core';
import { addTypenameSelectionDocumentTransform, preset } from '@graphql-codegen/client-preset';
import { buildSchema, lexicographicSortSchema, parse, printSchema } from 'graphql';

const root = resolve(fileURLToPath(import.meta.url), '..', '..', '..');
const fixtures = join(root, 'test', 'fixtures', 'trusted-documents');
const out = process.argv[2];

const schemaAst = lexicographicSortSchema(buildSchema(readFileSync(join(root, 'schema.graphql'), 'utf8')));
const documents = readdirSync(fixtures)
  .filter((name) => name.endsWith('.graphql'))
  .map((name) => {
    const rawSDL = readFileSync(join(fixtures, name), 'utf8').trim();
    return { location: join(fixtures, name), document: parse(rawSDL), rawSDL };
  });
// As docs/api.md tells a frontend team: the client preset, persisted documents, and __typename
// added to every selection (Apollo Client's cache asks for it; the manifest must hold it too).
const outputs = await preset.buildGeneratesSection({
  baseOutputDir: `${out}/`,
  presetConfig: { persistedDocuments: true, fragmentMasking: false },
  plugins: [],
  pluginMap: {},
  schema: parse(printSchema(schemaAst)),
  schemaAst,
  documents,
  config: {},
  documentTransforms: [{ name: 'addTypenameSelectionDocumentTransform', transformObject: addTypenameSelectionDocumentTransform }],
});
mkdirSync(out, { recursive: true });
for (const output of outputs) writeFileSync(output.filename, await codegen({ ...output, schemaAst }));
