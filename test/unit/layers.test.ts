import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/*
 * The layers of src/ (docs/architecture.md): the two transports (src/graphql, src/rest) sit on the
 * services, and neither reaches into the other; the services, their queries and what they share
 * (errors, the error mapping, db/, common/) reach into neither transport. Resolvers live beside
 * their services but belong to the GraphQL transport.
 */

const SRC = resolve(__dirname, '../../src');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The src/ files that `file` imports (relative imports only), as paths relative to src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s+'(\.{1,2}\/[^']+)'/g)].map((match) => match[1]);
  return specifiers.map((specifier) => relative(SRC, resolve(dirname(file), specifier)));
}

const files = sourceFiles(SRC).map((file) => ({ path: relative(SRC, file), imports: importsOf(file) }));
const layerOf = (path: string): 'graphql' | 'rest' | 'below' | 'other' => {
  if (path.startsWith('graphql/') || path.endsWith('.resolver.ts')) return 'graphql';
  if (path.startsWith('rest/')) return 'rest';
  if (/^(trainers|creatures|auth|events|common|db)\//.test(path) || ['errors.ts', 'error-mapping.ts', 'services.ts'].includes(path)) {
    return 'below';
  }
  return 'other';
};
const importsFrom = (path: string, layer: 'graphql' | 'rest') =>
  files
    .find((file) => file.path === path)!
    .imports.filter((target) =>
      layer === 'graphql' ? target.startsWith('graphql/') || target.endsWith('.resolver') : target.startsWith('rest/'),
    );

describe('the layers of src/', () => {
  it('finds the source files it checks', () => {
    expect(files.filter((file) => layerOf(file.path) === 'below').length).toBeGreaterThan(20);
    expect(importsOf(join(SRC, 'rest/problem.ts'))).toContain('error-mapping');
  });

  it('keeps the GraphQL transport out of the REST shim and the REST shim out of GraphQL', () => {
    const crossings = files.flatMap((file) => {
      const layer = layerOf(file.path);
      if (layer === 'graphql') return importsFrom(file.path, 'rest').map((target) => `${file.path} -> ${target}`);
      if (layer === 'rest') return importsFrom(file.path, 'graphql').map((target) => `${file.path} -> ${target}`);
      return [];
    });
    expect(crossings).toEqual([]);
  });

  it('keeps both transports out of the services, their queries, errors and what they share', () => {
    const upward = files
      .filter((file) => layerOf(file.path) === 'below')
      .flatMap((file) =>
        [...importsFrom(file.path, 'graphql'), ...importsFrom(file.path, 'rest')].map((target) => `${file.path} -> ${target}`),
      );
    expect(upward).toEqual([]);
  });
});
