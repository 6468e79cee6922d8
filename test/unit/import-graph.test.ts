/**
 * The source's import graph has no circle: files that import each other, `import type` included, cannot be read,
 * moved or tested one at a time (a circle of 8 files in common/input once tied the spec to its rules, the cost and
 * the results). Read with TypeScript's own scanner of imports, over every source file of the lab (tests and fixtures
 * aside); lint keeps the layers (eslint.config.js), this test the files within them.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const SOURCE_FOLDERS = ['common', 'lib', 'analysis', 'infra', 'activities', 'workflows', 'worker', 'client', 'bench'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Each file's imports of other source files (relative specifiers resolved to a .ts file or a folder's index.ts). */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const resolve = (from: string, spec: string): string | null => {
    if (!spec.startsWith('.')) return null;
    const base = path.resolve(path.dirname(from), spec);
    return [`${base}.ts`, path.join(base, 'index.ts')].find((f) => known.has(f)) ?? null;
  };
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      return [file, importedFiles.map((i) => resolve(file, i.fileName)).filter((f): f is string => f !== null)];
    }),
  );
}

/** Strongly connected components of more than one file (Tarjan), or a file that imports itself. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.map((f) => path.relative(PROJECT_ROOT, f)).sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the import graph', () => {
  const files = SOURCE_FOLDERS.flatMap((f) => sourceFiles(path.join(PROJECT_ROOT, f)));
  const graph = importGraph(files);

  it('reads every source file and its imports, import type included', () => {
    expect(files.length).toBeGreaterThan(200);
    const spec = path.join(PROJECT_ROOT, 'common', 'input', 'spec.ts');
    expect(graph.get(path.join(PROJECT_ROOT, 'common', 'input', 'rules.ts'))).toContain(spec);
  });

  it('has no circle', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('would see one: two files that import each other', () => {
    const [a, b] = ['/x/a.ts', '/x/b.ts'];
    expect(circles(new Map([[a, [b]], [b, [a]]]))).toHaveLength(1);
  });
});
