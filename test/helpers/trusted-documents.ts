import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { DocumentNode } from 'graphql';

/** The documents of test/fixtures/trusted-documents as graphql-codegen's client preset emits them. */
export interface Generated {
  /** persisted-documents.json: `sha256:<hex>` -> the document's text. */
  readonly manifestFile: string;
  readonly manifest: Readonly<Record<string, string>>;
  /** Each operation's generated DocumentNode (with the hash codegen embeds in `__meta__`), by operation name. */
  readonly documents: Readonly<Record<string, DocumentNode & { __meta__: { hash: string } }>>;
  readonly folder: string;
}

const ROOT = resolve(__dirname, '..', '..');

/**
 * Runs graphql-codegen's client preset with `persistedDocuments: true` over the fixture
 * documents (test/helpers/codegen.mjs), into a new temporary folder, as a frontend's build would.
 */
export function generateTrustedDocuments(): Generated {
  const folder = mkdtempSync(join(tmpdir(), 'registry-codegen-'));
  const out = join(folder, 'gql');
  execFileSync(process.execPath, [join(__dirname, 'codegen.mjs'), out], { cwd: ROOT, stdio: 'pipe' });
  const manifestFile = join(out, 'persisted-documents.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, string>;
  // The generated module's documents are JSON literals: read as the bundler would inline them.
  const code = readFileSync(join(out, 'graphql.ts'), 'utf8');
  const documents: Record<string, DocumentNode & { __meta__: { hash: string } }> = {};
  for (const match of code.matchAll(/^export const (\w+)Document = (\{.*\}) as unknown as DocumentNode/gm)) {
    documents[match[1]] = JSON.parse(match[2]) as DocumentNode & { __meta__: { hash: string } };
  }
  return { manifestFile, manifest, documents, folder };
}
