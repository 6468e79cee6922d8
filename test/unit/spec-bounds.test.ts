/**
 * Every size, length, count and duration a spec sets has an upper bound (a meta-test reads the schemas and fails on
 * one without), each new bound refuses the value above it, the run's cost ceiling refuses an estimate above it, and
 * the settings and scripts that would log without bound are refused on their field.
 */
import { z } from 'zod';
import { costCeilingProblems, estimateCost, withPriceFloor } from '../../common/input/cost';
import { failoverLedgerBytes, FailoverDrillSpecSchema, RestoreDrillSpecSchema, resolveFailoverDrill, resolveRestoreDrill } from '../../common/input/drill-spec';
import { ExperimentSpecSchema, LIST_PRICES_USD, SPEC_LIMITS } from '../../common/input/spec';
import { resolveSpec } from '../../common/input/resolve';
import { pgbenchLogBytes, serverLogProblems } from '../../common/input/rules';
import { problemsOf } from '../helpers/spec-problems';

type JsonSchema = {
  type?: string | string[];
  maximum?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
};

/**
 * Every leaf of a schema that lacks a bound: a number without a maximum, a string without a maximum length or a
 * pattern (free text), a list without a maximum length. `free` lists the paths allowed to be free text.
 */
function unbounded(node: JsonSchema | undefined, path: string, free: string[]): string[] {
  if (!node || typeof node !== 'object') return [];
  const out: string[] = [];
  for (const alt of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) out.push(...unbounded(alt, path, free));
  const bounded = node.enum !== undefined || node.const !== undefined;
  if ((node.type === 'number' || node.type === 'integer') && node.maximum === undefined && !bounded) out.push(`${path}: number without a maximum`);
  if (node.type === 'string' && !bounded) {
    if (node.maxLength === undefined) out.push(`${path}: string without a maximum length`);
    if (!node.pattern && !free.includes(path)) out.push(`${path}: string without a pattern`);
  }
  if (node.type === 'array') {
    if (node.maxItems === undefined) out.push(`${path}: list without a maximum length`);
    out.push(...unbounded(node.items, `${path}[]`, free));
  }
  for (const [key, child] of Object.entries(node.properties ?? {})) out.push(...unbounded(child, `${path}.${key}`, free));
  if (typeof node.additionalProperties === 'object') {
    out.push(...unbounded(node.additionalProperties, `${path}.*`, free));
    out.push(...unbounded(node.propertyNames, `${path}.<name>`, free));
  }
  return out;
}

/** postgres.settings: names and values are bounded by BoundedServerSettings (tested below) and the real server's ranges. */
const SETTINGS = ['postgres.settings.*', 'postgres.settings.<name>'];

describe('upper bounds of a spec', () => {
  it.each([
    ['experiment', ExperimentSpecSchema],
    ['restore drill', RestoreDrillSpecSchema],
    ['failover drill', FailoverDrillSpecSchema],
  ] as const)('every number, string and list of the %s spec has a maximum, every string but the script a pattern', (_, schema) => {
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
    const found = unbounded(json, '', ['.workload.script']).filter((p) => !SETTINGS.some((s) => p.startsWith(`.${s}:`)));
    expect(found).toEqual([]);
  });

  it('the meta-test finds an unbounded field', () => {
    const json = z.toJSONSchema(z.object({ n: z.number(), s: z.string().regex(/x/), a: z.array(z.string().max(3).regex(/x/)) }), { io: 'input' }) as JsonSchema;
    expect(unbounded(json, '', [])).toEqual(['.n: number without a maximum', '.s: string without a maximum length', '.a: list without a maximum length']);
  });

  it.each([
    ['storageClasses.gp3.sizeGiB', { storageClasses: { gp3: { sizeGiB: 16_385 } } }, 'at most 16384'],
    ['workload.script', { workload: { script: `UPDATE pgbench_accounts SET abalance = 1 WHERE aid = 1;\n${'-- pad\n'.repeat(10_000)}` } }, 'at most 65536'],
    ['phases.vacuum.bloatMB', { phases: { vacuum: { bloatMB: 1_000_001 } } }, 'at most 1000000'],
    ['phases.backlog.backlogMB', { phases: { backlog: { backlogMB: 2e6 } } }, 'at most 1000000'],
    ['durability.drills', { durability: { drills: ['restore', 'restore'] } }, 'each drill at most once'],
    ['aws.securityGroupIds', { aws: { securityGroupIds: Array.from({ length: 17 }, (_, i) => `sg-${String(i).padStart(8, '0')}`) } }, 'at most 16'],
    ['aws.maxCostUsd', { aws: { maxCostUsd: 1e6 } }, 'at most 100000'],
    ['aws.storagePriceUsd.gp3GiBMonth', { aws: { storagePriceUsd: { gp3GiBMonth: 11 } } }, 'at most 10'],
    ['name', { name: 'x'.repeat(41) }, 'at most 40'],
  ])('refuses a value above the bound of %s', (path, over, fragment) => {
    const problems = problemsOf(resolveSpec, { preset: 'ci', ...over });
    expect(problems).toEqual([{ path, message: expect.stringContaining(fragment) }]);
  });

  it('bounds the storage classes and the clusters of a run', () => {
    const classes = (n: number) => ({ 'local-disk': null, gp3: null, ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { kind: 'local-disk' }])) });
    expect(problemsOf(resolveSpec, { preset: 'ci', storageClasses: classes(9), compare: null })).toEqual([
      { path: 'storageClasses', message: expect.stringContaining('9 storage classes; a run compares at most 8') },
    ]);
    expect(problemsOf(resolveSpec, { preset: 'ci', storageClasses: classes(8), compare: null, clustersPerClass: 8 })).toEqual([]);
    expect(problemsOf(resolveSpec, { preset: 'ci', storageClasses: classes(8), compare: null, clustersPerClass: 9 })).toEqual([
      { path: 'clustersPerClass', message: expect.stringContaining('9 clusters per class x 8 classes = 72 clusters; a run has at most 64') },
    ]);
  });

  it('bounds postgres.settings: how many, and each name and value', () => {
    const letters = (i: number) => String.fromCharCode(97 + (i % 26), 97 + Math.floor(i / 26));
    const many = Object.fromEntries(Array.from({ length: SPEC_LIMITS.settings + 1 }, (_, i) => [`setting_${letters(i)}`, '1MB']));
    expect(problemsOf(resolveSpec, { preset: 'ci', postgres: { settings: many } })).toContainEqual({
      path: 'postgres.settings',
      message: '201 settings; at most 200 may be set',
    });
    expect(problemsOf(resolveSpec, { preset: 'ci', postgres: { settings: { search_path: 'a'.repeat(1025) } } })).toEqual([
      { path: 'postgres.settings.search_path', message: 'the value is 1025 characters; at most 1024' },
    ]);
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', postgres: { settings: { [`a${'_'.repeat(63)}`]: 1 } } })[0].message).toContain('at most 63 characters');
  });

  it('bounds the drills: checksum tables, names, sizes', () => {
    const tables = Array.from({ length: 33 }, (_, i) => `t${i}`);
    expect(problemsOf(resolveRestoreDrill, { preset: 'ci', checksumTables: tables })).toEqual([
      { path: 'checksumTables', message: 'must name at most 32 tables' },
    ]);
    expect(problemsOf(resolveFailoverDrill, { preset: 'ci', storageClass: { sizeGiB: 20_000 } })[0]).toEqual({
      path: 'storageClass.sizeGiB',
      message: expect.stringContaining('at most 16384'),
    });
  });
});

describe('cost ceiling', () => {
  const seedFull = (over: Record<string, unknown> = {}) => resolveSpec({ preset: 'seed-full', ...over });

  it('passes seed-full with the defaults: about $29 against the default ceiling of $100', () => {
    const total = estimateCost(seedFull()).totalUsd!;
    expect(total).toBeGreaterThan(25);
    expect(total).toBeLessThan(35);
    expect(costCeilingProblems(seedFull(), { usd: 100, field: 'aws.maxCostUsd', source: 'test' })).toEqual([]);
    expect(problemsOf(resolveSpec, { preset: 'seed-full', aws: { maxCostUsd: 100 } })).toEqual([]);
  });

  it('refuses 16 clusters per class of a large instance, giving the estimate, its main terms and the field', () => {
    const big = { clustersPerClass: 16, host: { instanceType: 'm6id.32xlarge' }, aws: { maxCostUsd: 100, hourlyPriceUsd: { 'm6id.32xlarge': 7.5936 } } };
    const [problem, ...rest] = problemsOf(resolveSpec, { preset: 'seed-full', ...big });
    expect(rest).toEqual([]);
    expect(problem.path).toBe('aws.maxCostUsd');
    expect(problem.message).toMatch(/^the run is estimated at \$\d+\.\d\d for 32 hosts \(m6id\.32xlarge on-demand [\d.]+ instance-hours = \$\d+\.\d\d; /);
    expect(problem.message).toContain('above its ceiling of $100 (aws.maxCostUsd); lower clustersPerClass');
    const estimate = Number(/estimated at \$([\d.]+)/.exec(problem.message)![1]);
    expect(estimate).toBeCloseTo(estimateCost(resolveSpec({ preset: 'seed-full', ...big, aws: { ...big.aws, maxCostUsd: undefined } })).totalUsd!, 1);
    // Exactly at the estimate passes: the ceiling compares the same figure the dry run prints.
    expect(problemsOf(resolveSpec, { preset: 'seed-full', ...big, aws: { ...big.aws, maxCostUsd: Math.ceil(estimate) } })).toEqual([]);
  });

  it('cannot be dodged by quoting low prices: the floor keeps the control worker\'s', () => {
    const cheap = seedFull({ aws: { hourlyPriceUsd: { 'm6id.4xlarge': 0.0001 }, storagePriceUsd: { gp3GiBMonth: 0 } } });
    expect(estimateCost(cheap).totalUsd).toBeLessThan(1);
    const floored = withPriceFloor(cheap, LIST_PRICES_USD);
    expect(floored.aws!.hourlyPriceUsd['m6id.4xlarge']).toBe(0.9492);
    expect(floored.aws!.storagePriceUsd.gp3GiBMonth).toBe(0.08);
    expect(estimateCost(floored).totalUsd).toBeCloseTo(estimateCost(seedFull()).totalUsd!, 1);
    // A higher price of the spec's own stands.
    expect(withPriceFloor(seedFull({ aws: { hourlyPriceUsd: { 'm6id.4xlarge': 2 } } }), LIST_PRICES_USD).aws!.hourlyPriceUsd['m6id.4xlarge']).toBe(2);
    // A type the floor does not price has no price at all: its estimate cannot be held to a ceiling.
    const unpriced = withPriceFloor(seedFull({ host: { instanceType: 'p5.48xlarge' }, aws: { hourlyPriceUsd: { 'p5.48xlarge': 0.01 } } }), LIST_PRICES_USD);
    expect(costCeilingProblems(unpriced, { usd: 100, field: 'aws.maxCostUsd', source: 'test' })).toEqual([
      { path: 'aws.hourlyPriceUsd.p5.48xlarge', message: expect.stringContaining('no price, so the run cannot be held to its cost ceiling of $100') },
    ]);
  });
});

describe('logs that nothing would bound', () => {
  it.each([
    ['log_statement', 'all', 'set it to "none"'],
    ['log_statement', 'mod', 'set it to "none"'],
    ['log_statement', 'ddl', 'set it to "none"'],
    ['log_min_duration_statement', 0, 'set it to -1'],
    ['log_min_duration_statement', '250ms', 'set it to -1'],
    ['log_min_duration_sample', 0, 'set it to -1'],
    ['log_transaction_sample_rate', 0.01, 'set it to 0'],
    ['log_duration', 'on', 'set it to off'],
    ['log_duration', true, 'set it to off'],
    ['log_statement_stats', 'yes', 'set it to off'],
    ['log_executor_stats', 1, 'set it to off'],
    ['debug_print_plan', 'on', 'set it to off'],
    ['log_temp_files', 0, 'set it to -1'],
    ['log_min_messages', 'debug5', 'set it to warning (the default), error, log, fatal or panic'],
    ['log_min_messages', 'NOTICE', 'set it to warning (the default), error, log, fatal or panic'],
  ])('refuses %s = %j on its field, in experiments and both drills', (name, value, fix) => {
    const settings = { [name]: value };
    for (const [resolve, input] of [
      [resolveSpec, { preset: 'ci', postgres: { settings } }],
      [resolveRestoreDrill, { preset: 'ci', postgres: { settings } }],
      [resolveFailoverDrill, { preset: 'ci', postgres: { settings } }],
    ] as const)
      expect(problemsOf(resolve, input)).toEqual([
        { path: `postgres.settings.${name}`, message: expect.stringContaining(`the lab refuses per-statement logging: ${fix}, or remove it`) },
      ]);
  });

  it('lets the values that log nothing per statement through', () => {
    const quiet = {
      log_statement: 'none',
      log_min_duration_statement: -1,
      log_min_duration_sample: '-1',
      log_transaction_sample_rate: 0,
      log_duration: 'off',
      log_statement_stats: false,
      log_temp_files: -1,
      log_min_messages: 'warning',
      log_connections: 'on',
      log_lock_waits: 'on',
    };
    expect(serverLogProblems(quiet, 'postgres.settings')).toEqual([]);
    expect(problemsOf(resolveSpec, { preset: 'ci', postgres: { settings: quiet } })).toEqual([]);
  });

  it('refuses a script without SQL: every pass through its meta-commands would be a logged transaction', () => {
    expect(problemsOf(resolveSpec, { preset: 'ci', phases: { backlog: { enabled: false } }, workload: { script: '\\set x 1\n-- UPDATE nothing\n' } })).toEqual([
      { path: 'workload.script', message: expect.stringContaining('runs no SQL statement, only meta-commands') },
    ]);
    expect(problemsOf(resolveSpec, { preset: 'ci', phases: { backlog: { enabled: false } }, workload: { script: '\\set x 1\nSELECT :x;\n' } })).toEqual([]);
  });

  it('bounds the transaction logs at the measured line size and the per-CPU ceiling', () => {
    // 6 s of ci on 2 CPUs: 6 x 2 x 50,000 x 48 bytes.
    expect(pgbenchLogBytes({ warmupSeconds: 1, durationSeconds: 5 }, 2)).toBe(28_800_000);
    const drill = resolveFailoverDrill({ preset: 'ci', rounds: 2 });
    // Two rounds of 2 + 1 s of writes, 12 bytes an id.
    expect(failoverLedgerBytes(drill, 1)).toBe(2 * 3 * 50_000 * 48);
  });
});
