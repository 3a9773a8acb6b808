// Lint: typescript-eslint's type-aware recommended rules over the sources, scripts, tests and bench.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
    // Jest's asymmetric matchers (expect.any(String) and the like) are typed `any` by @types/jest;
    // placing one in an expected object is all this rule would flag in tests.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly', module: 'writable', require: 'readonly', console: 'readonly' } },
  },
);
