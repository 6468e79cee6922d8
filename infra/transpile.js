#!/usr/bin/env node
/*
 * The demo's build: every TypeScript source of tsconfig.json's folders into dist/ one file at a time
 * (ts.transpileModule), without tsc's type check. On a fresh 2-core machine `tsc -p` took 75 s, most of it reading and
 * checking types the demo does not need; this takes under a third of its CPU (18 CPU-s against 60.5 here). The test
 * bootstrap keeps tsc: there the type check is the point. The sources build alone file by file (`tsc
 * --isolatedModules` finds nothing), so the output is tsc's own: test/unit/transpile.test.ts compares the two.
 *
 * Usage: node infra/transpile.js [--out DIR] [FILE.ts ...]   (default: every source, into tsconfig's outDir)
 * Plain JavaScript: it runs before anything is built.
 */
'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- plain CommonJS: it runs before anything is built */
const fs = require('fs');
const path = require('path');
const ts = require('typescript');

const root = path.resolve(__dirname, '..');

/** tsconfig.json's compiler options and folders, as tsc reads them. */
function readConfig() {
  const file = path.join(root, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, root, undefined, file);
  if (parsed.errors.length) throw new Error(parsed.errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('\n'));
  return parsed;
}

/** One source's JavaScript and source map as tsc writes them under `outDir`. */
function transpileFile(file, options, outDir) {
  const relative = path.relative(options.rootDir, file);
  const outFile = path.join(outDir, relative.replace(/\.ts$/, '.js'));
  const result = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    compilerOptions: { ...options, outDir, noEmit: false, incremental: false, tsBuildInfoFile: undefined },
    fileName: file,
    reportDiagnostics: true,
  });
  const errors = (result.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length) throw new Error(`${relative}: ${errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
  // With rootDir and outDir given, the source map names its file and source as tsc's does.
  const outputs = [[outFile, result.outputText]];
  if (result.sourceMapText !== undefined) outputs.push([`${outFile}.map`, result.sourceMapText]);
  return outputs;
}

/** The JSON files the emitted code requires by a relative path (tsc copies each one it resolves into outDir). */
function requiredJson(outFile, text, options, outDir) {
  const found = [];
  for (const m of text.matchAll(/require\("(\.{1,2}\/[^"]+\.json)"\)/g)) {
    const target = path.resolve(path.dirname(outFile), m[1]);
    found.push([path.join(options.rootDir, path.relative(outDir, target)), target]);
  }
  return found;
}

/** Writes `text` unless the file holds it already: unchanged outputs keep their times. */
function writeIfChanged(file, text) {
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) return false;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return true;
}

function main(argv) {
  const config = readConfig();
  const options = { ...config.options, rootDir: config.options.rootDir ?? root };
  let outDir = options.outDir;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out') outDir = path.resolve(argv[++i]);
    else files.push(path.resolve(argv[i]));
  }
  const sources = files.length ? files : config.fileNames.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  let written = 0;
  for (const file of sources) {
    for (const [out, text] of transpileFile(file, options, outDir)) {
      if (writeIfChanged(out, text)) written++;
      for (const [from, to] of out.endsWith('.js') ? requiredJson(out, text, options, outDir) : []) if (writeIfChanged(to, fs.readFileSync(from, 'utf8'))) written++;
    }
  }
  return { sources: sources.length, written };
}

if (require.main === module) {
  try {
    const { sources, written } = main(process.argv.slice(2));
    process.stdout.write(`${sources} sources, ${written} outputs written\n`);
  } catch (err) {
    process.stderr.write(`transpile: ${err.message}\n`);
    process.exit(1);
  }
}

module.exports = { main, readConfig, transpileFile };
