// Lints the TypeScript sources. The rule that matters most: workflow code (and the common code it imports) must
// stay deterministic, so Node built-ins are banned there; side effects belong in activities.
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

module.exports = tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.lab/**', 'test-artifacts/**', '*.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // A promise nobody awaits in workflow code is a step of the plan that may never happen (or fail unseen), and in
    // activities and workers an error nobody handles: typed linting catches both.
    files: ['workflows/**/*.ts', 'activities/**/*.ts', 'worker/**/*.ts', 'client/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['workflows/**/*.ts', 'common/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code must be deterministic: do this in an activity.',
          })),
          patterns: [
            {
              group: ['**/activities/**', '**/infra/**', '**/worker/**', '**/client/**'],
              allowTypeImports: true,
              message: 'Workflows import activity types only (import type ...); side effects live in activities.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'Workflow code must not read the environment.' },
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
      ],
    },
  },
);
