/**
 * The demo's build (infra/transpile.js: one file at a time, no type check) writes what tsc writes. Compared with the
 * suite's own dist/, which the test bootstrap builds with tsc: a quarter of the sources (every fourth, so each run
 * sees the same ones) and the one that imports JSON, JavaScript and source maps byte for byte, JSON by value.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../lib/lab-paths';

type Output = [file: string, text: string];
// eslint-disable-next-line @typescript-eslint/no-require-imports -- plain JavaScript that runs before any build
const transpile = require(path.join(PROJECT_ROOT, 'infra/transpile.js')) as {
  readConfig(): { fileNames: string[]; options: Record<string, unknown> & { outDir: string; rootDir?: string } };
  transpileFile(file: string, options: Record<string, unknown>, outDir: string): Output[];
  main(argv: string[]): { sources: number; written: number };
};

const config = transpile.readConfig();
const options = { ...config.options, rootDir: config.options.rootDir ?? PROJECT_ROOT };
const outDir = config.options.outDir;
const JSON_IMPORTER = path.join(PROJECT_ROOT, 'common/results/reference.ts');
const sources = config.fileNames.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).sort();
const sample = [...new Set([...sources.filter((_, i) => i % 4 === 0), JSON_IMPORTER])];

/** Where a build's outputs differ from the transpile's: files missing, written after tsc's last build, or unequal. */
function differences(outputs: Output[], built: string, tscStamp: string): string[] {
  const found: string[] = [];
  const stamp = statSync(tscStamp).mtimeMs;
  for (const [file, text] of outputs) {
    const target = path.join(built, path.relative(outDir, file));
    const name = path.relative(PROJECT_ROOT, target);
    if (!existsSync(target)) found.push(`${name}: missing`);
    // A file written after tsc's stamp is not tsc's output: comparing with it would compare the transpile with itself.
    else if (statSync(target).mtimeMs > stamp + 1000) found.push(`${name}: written after tsc's last build`);
    else if (readFileSync(target, 'utf8') !== text) found.push(`${name}: differs`);
  }
  return found;
}

describe("the demo's transpile build", () => {
  const tscStamp = path.join(outDir, '.tsbuildinfo');
  const outputs = sample.flatMap((file) => transpile.transpileFile(file, options, outDir));

  it('writes the JavaScript and source maps tsc wrote, for a quarter of the sources', () => {
    expect(sample.length).toBeGreaterThan(sources.length / 4);
    expect(outputs.length).toBe(2 * sample.length);
    expect(differences(outputs, outDir, tscStamp)).toEqual([]);
  });

  it('finds a changed output, a missing one, and one written after tsc', () => {
    const [first, second, third] = outputs;
    const changed: Output[] = [[first[0], `${first[1]}\n`], second, third];
    expect(differences(changed, outDir, tscStamp)).toEqual([`${path.relative(PROJECT_ROOT, first[0])}: differs`]);
    const missing: Output[] = [[path.join(outDir, 'no-such-source.js'), '']];
    expect(differences(missing, outDir, tscStamp)).toEqual(['dist/no-such-source.js: missing']);
    // The same output in a build whose stamp is older than it: a transpile after tsc.
    const built = mkdtempSync(path.join(tmpdir(), 'transpile-'));
    try {
      const target = path.join(built, path.relative(outDir, first[0]));
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, first[1]);
      const stamp = path.join(built, '.tsbuildinfo');
      writeFileSync(stamp, '');
      const now = Date.now() / 1000;
      utimesSync(stamp, now - 10, now - 10);
      expect(differences([first], built, stamp)).toEqual([`${path.relative(PROJECT_ROOT, target)}: written after tsc's last build`]);
      utimesSync(stamp, now + 10, now + 10);
      expect(differences([first], built, stamp)).toEqual([]);
    } finally {
      rmSync(built, { recursive: true, force: true });
    }
  });

  it('copies the JSON a source imports, the same data tsc copies', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'transpile-'));
    try {
      expect(transpile.main(['--out', out, JSON_IMPORTER])).toEqual({ sources: 1, written: 3 });
      expect(readFileSync(path.join(out, 'common/results/reference.js'), 'utf8')).toMatch(/require\("\.\/reference\/posette-2026\.json"\)/);
      const copied = JSON.parse(readFileSync(path.join(out, 'common/results/reference/posette-2026.json'), 'utf8'));
      expect(copied).toEqual(JSON.parse(readFileSync(path.join(outDir, 'common/results/reference/posette-2026.json'), 'utf8')));
      // A second build over the same outputs writes nothing: unchanged files keep their times.
      expect(transpile.main(['--out', out, JSON_IMPORTER])).toEqual({ sources: 1, written: 0 });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
