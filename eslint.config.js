// Lints the TypeScript sources. The rule that matters most: workflow code (and the common code it imports) must
// stay deterministic, so Node built-ins are banned there; side effects belong in activities.
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

// What creates, writes, chowns or deletes files: in activities/, infra/ and worker/ only infra/lab-fs.ts may call it
// (it refuses paths outside the lab's folders, planted links and folders the lab did not make).
const fsWrites = ['rm', 'rmdir', 'unlink', 'chown', 'lchown', 'fchown', 'chmod', 'lchmod', 'fchmod', 'writeFile', 'appendFile', 'copyFile', 'cp', 'rename', 'mkdir', 'mkdtemp', 'symlink', 'link', 'truncate', 'ftruncate', 'open', 'utimes', 'lutimes'];
const fsSyncWrites = [...fsWrites.map((n) => `${n}Sync`), 'createWriteStream'];
const guardMessage = 'Create, write, chown and delete files through infra/lab-fs.ts (it refuses paths outside the lab and planted links).';
const fsModules = { 'node:fs': [...fsWrites, ...fsSyncWrites, 'promises'], fs: [...fsWrites, ...fsSyncWrites, 'promises'], 'node:fs/promises': fsWrites, 'fs/promises': fsWrites };

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
    files: ['activities/**/*.ts', 'infra/**/*.ts', 'worker/**/*.ts'],
    ignores: [
      // The guard itself.
      'infra/lab-fs.ts',
      // The cgroup file system is its own root: only root creates entries there and it has no links (cgroupPath checks).
      'infra/providers/local/cgroups.ts',
      // A probe file beside a server's own data directory, outside the lab's folders by design (diagnose's module).
      'activities/diagnose/fsync-probe.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: Object.entries(fsModules).map(([name, importNames]) => ({ name, importNames, message: guardMessage })) },
      ],
      'no-restricted-properties': [
        'error',
        ...['fs', 'fsp', 'promises'].flatMap((object) => [...fsWrites, ...fsSyncWrites].map((property) => ({ object, property, message: guardMessage }))),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportDeclaration[source.value=/^(node:)?fs(\\/promises)?$/] > :matches(ImportDefaultSpecifier, ImportNamespaceSpecifier)",
          message: `Import the fs functions you need by name. ${guardMessage}`,
        },
        { selector: "CallExpression[callee.name='require'][arguments.0.value=/^(node:)?fs/]", message: guardMessage },
      ],
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
