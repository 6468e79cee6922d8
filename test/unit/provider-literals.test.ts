/**
 * A provider is one module: its name as a string ('aws' as a value, or "aws" quoted in a message) appears only in
 * its own module, the workflow-safe half (common/providers/<name>.ts) and the infra half (infra/providers/<name>/).
 * Everything else, the spec's provider field included, reads the registry (common/providers/registry.ts). Every
 * registered provider but the embedded default is held to it: "local" is also a word of PostgreSQL's
 * (synchronous_commit) and of prose, and the default is what a spec without a provider section runs on. Read with
 * TypeScript's own scanner over every source file of the lab (tests and fixtures aside), so a comment or an
 * identifier (spec.aws, the section's key) is not a literal and a string is one wherever it sits: a comparison, a
 * type, a message, an array index, a template.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { PROVIDERS } from '../../common/providers/registry';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const SOURCE_FOLDERS = ['common', 'lib', 'analysis', 'infra', 'activities', 'workflows', 'worker', 'client', 'bench'];
/** A provider's own module: where its name may be written. */
const ownModule = (name: string) => [`common/providers/${name}.ts`, `infra/providers/${name}/`];
/** The providers held to it: all but the embedded default (the registry's first). */
const HELD = PROVIDERS.slice(1).map((p) => p.name);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [full] : [];
  });
}

const STRING_TOKENS = new Set([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateHead,
  ts.SyntaxKind.TemplateMiddle,
  ts.SyntaxKind.TemplateTail,
]);

/** A provider's name as a literal in a source text: each line and the literal's text ('aws', or one holding "aws"). */
function nameLiterals(source: string, name: string): { line: number; text: string }[] {
  const file = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (STRING_TOKENS.has(node.kind)) {
      const value = (node as ts.LiteralLikeNode).text;
      if (value === name || value.includes(`"${name}"`))
        found.push({ line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, text: node.getText(file) });
    }
    node.forEachChild(visit);
  };
  visit(file);
  return found;
}

const files = SOURCE_FOLDERS.flatMap((f) => sourceFiles(path.join(PROJECT_ROOT, f)));
const relative = (f: string) => path.relative(PROJECT_ROOT, f).split(path.sep).join('/');

describe('the source scan', () => {
  it('reads every source file, and holds every provider but the default (aws among them)', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(files.map(relative)).toEqual(expect.arrayContaining(['common/providers/registry.ts', 'workflows/hosts.ts', 'common/input/spec.ts']));
    expect(HELD).toContain('aws');
  });
});

describe.each(HELD)("the literal '%s'", (name) => {
  it("appears only in its provider's module", () => {
    const outside = files
      .filter((f) => !ownModule(name).some((a) => relative(f).startsWith(a)))
      .flatMap((f) => nameLiterals(readFileSync(f, 'utf8'), name).map((l) => `${relative(f)}:${l.line}: ${l.text}`));
    expect(outside).toEqual([]);
  });

  it('is there: the module names its provider (so the scan reads what it should)', () => {
    const module = readFileSync(path.join(PROJECT_ROOT, 'common', 'providers', `${name}.ts`), 'utf8');
    expect(nameLiterals(module, name).length).toBeGreaterThan(0);
  });
});

describe('the scanner', () => {

  it('would see one anywhere a string can be, and nothing in comments or identifiers', () => {
    const planted = [
      "// 'aws' in a comment, spec.aws an identifier",
      "const a = spec.provider === 'aws';",
      'type P = "local" | "aws";',
      "const m = `provider \"aws\" needs ${x}`;",
      'const b = spec[`aws`];',
      "const c = { aws: spec.aws };",
    ].join('\n');
    expect(nameLiterals(planted, 'aws').map((l) => l.line)).toEqual([2, 3, 4, 5]);
  });
});
