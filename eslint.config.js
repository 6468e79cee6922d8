// Lints the TypeScript sources. Three rules carry the architecture:
// - workflow code (and the common code it imports) stays deterministic: no Node built-ins, no process;
// - the layers import only downwards (LAYERS below; docs/architecture.md draws them);
// - only lib/lab-fs.ts reads, creates, writes, chowns or deletes files in the code that runs as root.
const tseslint = require('typescript-eslint');
const { builtinModules } = require('node:module');

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * Each folder and the folders it must never import from; `typesFrom` lists those of them whose types it may import
 * (`import type`), and no other import of them.
 * Bottom to top: common (pure, workflow-safe) < lib (tools: process runner, tool wrappers, parsers, file guard,
 * results stores) < analysis (pure analysis and reports) < infra (providers, Temporal dev server) < activities
 * (thin adapters) < workflows < worker, client.
 */
const LAYERS = {
  common: { never: ['lib', 'analysis', 'infra', 'activities', 'workflows', 'worker', 'client'], typesFrom: [] },
  lib: { never: ['analysis', 'infra', 'activities', 'workflows', 'worker', 'client'], typesFrom: [] },
  analysis: { never: ['infra', 'activities', 'workflows', 'worker', 'client'], typesFrom: [] },
  infra: { never: ['analysis', 'activities', 'workflows', 'worker', 'client'], typesFrom: [] },
  activities: { never: ['workflows', 'worker', 'client'], typesFrom: [] },
  // Workflows name activity types (proxies), and every other shape they share from common/; their code stays deterministic.
  workflows: {
    never: ['lib', 'analysis', 'infra', 'activities', 'worker', 'client'],
    typesFrom: ['activities'],
    message: 'Workflows import common/ and activity types only (import type ... from activities/); side effects live in activities, and the layers import only downwards (docs/architecture.md).',
  },
  worker: { never: ['client'], typesFrom: [] },
  // The CLI uses the tools, the analysis and the providers, never an activity's insides nor workflow code: it talks
  // to workflows through the Temporal client, with the shapes common/ defines.
  client: { never: ['activities', 'workflows'], typesFrom: ['activities'] },
};

/**
 * What reads, creates, writes, chowns or deletes files: in the code that runs as root only lib/lab-fs.ts may call it.
 * Reads too: root reading a file in a folder another user can write (the server's log, postmaster.pid, a tool's
 * output) would follow a link that user planted to any file on the machine, and put its text in a failure.
 */
const fsWrites = ['rm', 'rmdir', 'unlink', 'chown', 'lchown', 'fchown', 'chmod', 'lchmod', 'fchmod', 'writeFile', 'appendFile', 'copyFile', 'cp', 'rename', 'mkdir', 'mkdtemp', 'symlink', 'link', 'truncate', 'ftruncate', 'open', 'utimes', 'lutimes', 'readFile', 'readdir', 'opendir', 'read', 'readv'];
const fsSyncWrites = [...fsWrites.map((n) => `${n}Sync`), 'createWriteStream', 'createReadStream'];
const guardMessage =
  'Read, create, write, chown and delete files through lib/lab-fs.ts (it refuses paths outside the lab and planted links, and never reads through one): readLabFile, readKernelFile, readOperatorFile.';
const fsModules = { 'node:fs': [...fsWrites, ...fsSyncWrites, 'promises'], fs: [...fsWrites, ...fsSyncWrites, 'promises'], 'node:fs/promises': fsWrites, 'fs/promises': fsWrites };
/** The folders whose code runs as root (the control worker, host agents); lib/lab-fs.ts and the exemptions below aside. */
const GUARDED = ['lib', 'analysis', 'infra', 'activities', 'worker'];
const GUARD_EXEMPT = [
  // The guard itself.
  'lib/lab-fs.ts',
  // The cgroup file system is its own root: only root creates entries there and it has no links (cgroupPath checks).
  'lib/cgroups.ts',
  // A probe file beside a server's own data directory, outside the lab's folders by design (diagnose's module).
  'lib/diagnose/fsync-probe.ts',
];
/** Folders whose code is workflow code or imported by it: deterministic. */
const DETERMINISTIC = ['common', 'workflows'];

/** The no-restricted-imports options of a folder: its layer's back edges, the file guard, the determinism rule. */
function restrictedImports(folder, { guarded }) {
  const { never, typesFrom, message } = LAYERS[folder];
  const paths = [];
  if (guarded) paths.push(...Object.entries(fsModules).map(([name, importNames]) => ({ name, importNames, message: guardMessage })));
  if (DETERMINISTIC.includes(folder)) paths.push(...nodeBuiltins.map((name) => ({ name, message: 'Workflow code must be deterministic: do this in an activity.' })));
  // Relative imports that climb to a top-level folder named in `never` (package names such as @temporalio/client pass).
  const climbTo = (folders) => `^(\\./)?(\\.\\./)+(${folders.join('|')})(/|$)`;
  const typesOnly = never.filter((f) => typesFrom.includes(f));
  const nothing = never.filter((f) => !typesFrom.includes(f));
  const patterns = [
    ...(nothing.length
      ? [{ regex: climbTo(nothing), message: message ?? `${folder}/ sits below ${nothing.join(', ')}: an import from there runs against the layers (docs/architecture.md).` }]
      : []),
    ...(typesOnly.length
      ? [{ regex: climbTo(typesOnly), allowTypeImports: true, message: message ?? `${folder}/ imports only types from ${typesOnly.join(', ')} (import type ...): the layers import only downwards (docs/architecture.md).` }]
      : []),
  ];
  return ['error', { paths, patterns }];
}

const guardRules = {
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
};

module.exports = tseslint.config(
  // zz-lint-probe-*: the snippets test/integration/lint-rules.test.ts writes to break each rule on purpose; it lints
  // them itself (--no-ignore), and `npm test` runs eslint beside the suite, which must not see them.
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.lab/**', 'test-artifacts/**', '*.js', '**/zz-lint-probe-*'] },
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
    files: ['workflows/**/*.ts', 'activities/**/*.ts', 'worker/**/*.ts', 'client/**/*.ts', 'lib/**/*.ts', 'analysis/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: __dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  // One block per layer: its imports, and the file guard where its code runs as root.
  ...Object.keys(LAYERS).map((folder) => ({
    files: [`${folder}/**/*.ts`],
    ignores: GUARD_EXEMPT,
    rules: { 'no-restricted-imports': restrictedImports(folder, { guarded: GUARDED.includes(folder) }), ...(GUARDED.includes(folder) ? guardRules : {}) },
  })),
  {
    files: GUARD_EXEMPT,
    rules: { 'no-restricted-imports': restrictedImports('lib', { guarded: false }) },
  },
  {
    files: DETERMINISTIC.map((f) => `${f}/**/*.ts`),
    rules: {
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'Workflow code must not read the environment.' },
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
      ],
    },
  },
);
