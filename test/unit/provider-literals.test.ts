/**
 * A provider is one module: the string 'aws' (the provider's name as a value, or "aws" quoted in a message) appears
 * only in the AWS provider's own module, its workflow-safe half (common/providers/aws.ts) and its infra half
 * (infra/providers/aws/). Everything else, the spec's provider field included, reads the registry
 * (common/providers/registry.ts). Read with TypeScript's own scanner over every source file of the lab (tests and
 * fixtures aside), so a comment or an identifier (spec.aws, the section's key) is not a literal and a string is
 * one wherever it sits: a comparison, a type, a message, an array index, a template.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../../lib/lab-paths';

const SOURCE_FOLDERS = ['common', 'lib', 'analysis', 'infra', 'activities', 'workflows', 'worker', 'client', 'bench'];
/** The AWS provider's module: where its name may be written. */
const ALLOWED = ['common/providers/aws.ts', 'infra/providers/aws/'];
const NAME = 'aws';

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

/** The provider's name as a literal in a source text: each line and the literal's text ('aws', or one holding "aws"). */
function nameLiterals(source: string, name: string = NAME): { line: number; text: string }[] {
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

describe("the literal 'aws'", () => {
  const files = SOURCE_FOLDERS.flatMap((f) => sourceFiles(path.join(PROJECT_ROOT, f)));
  const relative = (f: string) => path.relative(PROJECT_ROOT, f).split(path.sep).join('/');

  it('reads every source file', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(files.map(relative)).toEqual(expect.arrayContaining(['common/providers/registry.ts', 'workflows/hosts.ts', 'common/input/spec.ts']));
  });

  it("appears only in the AWS provider's module", () => {
    const outside = files
      .filter((f) => !ALLOWED.some((a) => relative(f).startsWith(a)))
      .flatMap((f) => nameLiterals(readFileSync(f, 'utf8')).map((l) => `${relative(f)}:${l.line}: ${l.text}`));
    expect(outside).toEqual([]);
  });

  it('is there: the AWS module names its provider (so the scan reads what it should)', () => {
    const module = readFileSync(path.join(PROJECT_ROOT, 'common', 'providers', 'aws.ts'), 'utf8');
    expect(nameLiterals(module).length).toBeGreaterThan(0);
  });

  it('would see one anywhere a string can be, and nothing in comments or identifiers', () => {
    const planted = [
      "// 'aws' in a comment, spec.aws an identifier",
      "const a = spec.provider === 'aws';",
      'type P = "local" | "aws";',
      "const m = `provider \"aws\" needs ${x}`;",
      'const b = spec[`aws`];',
      "const c = { aws: spec.aws };",
    ].join('\n');
    expect(nameLiterals(planted).map((l) => l.line)).toEqual([2, 3, 4, 5]);
  });
});
