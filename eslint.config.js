import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/', '**/dist/', '.temporal/', '.tools/', '.data/', 'coverage/', 'test-artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // Handlers registered before the main flow read variables the flow assigns later.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      // Activities and handlers are async by contract even when they do not await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The example backend has its own tsconfig, for the packed client package; linted with the root's, which maps the
    // package's name to its source (src/client/index.ts), so it is checked without installing anything.
    files: ['examples/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: false, project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // The Node preflight: plain CommonJS outside the TypeScript project, so it runs on the old Node it refuses.
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: { process: 'readonly' },
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node APIs, no I/O.
    files: ['workflows/**/*.ts', 'src/definitions/**/*.ts', 'test/**/workflows.ts', 'test/**/*-workflows.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code must be deterministic: no Node built-ins.' })),
          patterns: [
            {
              group: ['undici', 'fastify', '@temporalio/activity', '@temporalio/worker', '@temporalio/client'],
              message: 'Workflows must not do I/O.',
            },
          ],
        },
      ],
      // The clock is read in one place, which knows when a replay would read another time (workflows/clock.ts).
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: 'Read the time through workflows/clock.ts (never right after a local activity).',
        },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Read the time through workflows/clock.ts.' },
      ],
      // Each cached workflow loads its own copy of every module: zod and the contract cost ~1.6 MiB per workflow.
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['zod', '**/esign/schemas.js', '**/transaction/input.js'],
              allowTypeImports: true,
              message: 'Keep zod out of the workflow sandbox: import types only (validation runs in activities).',
            },
            // Types only: a value import would pull the activities' Node modules (I/O, crypto) into the sandbox.
            { group: ['**/activities/**'], allowTypeImports: true, message: 'Import activities as types only.' },
          ],
        },
      ],
    },
  },
  {
    files: ['workflows/clock.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
