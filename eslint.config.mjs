// Lint: typescript-eslint's type-aware recommended rules over the sources, scripts, tests and bench.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** `x as unknown as T`: a cast past the type checker, the way into a library's private fields. */
const NO_DOUBLE_CAST = {
  selector: 'TSAsExpression > TSAsExpression.expression > TSUnknownKeyword.typeAnnotation',
  message: "No `as unknown as`: use the public API (or a type guard), never a library's internals.",
};

/**
 * A string or template that starts like an SQL statement: a keyword in capitals (as all SQL here is
 * written) followed by more text, so that 'DELETE' (an HTTP method) and 'Create a creature...' (a
 * description) are not taken for SQL.
 */
const SQL = String.raw`/^\s*((SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|SET)\s+\S|START TRANSACTION\b)/`;
const NO_SQL_TEXT = [
  { selector: `Literal[value=${SQL}]`, message: 'SQL belongs in a *.queries.ts file (or a migration).' },
  { selector: `TemplateLiteral[quasis.0.value.raw=${SQL}]`, message: 'SQL belongs in a *.queries.ts file (or a migration).' },
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Fastify hooks and Apollo plugin hooks are async by their interfaces, awaiting or not.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // No reaching into a library's internals through a double cast (the project's rule: public APIs only).
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', NO_DOUBLE_CAST, ...NO_SQL_TEXT] },
  },
  {
    // SQL lives in query files and migrations only.
    files: ['src/**/*.queries.ts', 'src/db/migrations/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', NO_DOUBLE_CAST] },
  },
  {
    // Jest's asymmetric matchers (expect.any(String) and the like) are typed `any` by @types/jest;
    // placing one in an expected object is all this rule would flag in tests.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly', module: 'writable', require: 'readonly', console: 'readonly' } },
  },
);
