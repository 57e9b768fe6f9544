#!/usr/bin/env node
// The code's shape, checked in CI: no source file over 250 lines unless its header comment says
// why (a line starting with "Long because"), and no function over 60 lines (80 in a test file,
// where a claim's steps read best in one place). Counts the lines of each function-like node
// with TypeScript's own parser. Prints every offender; exits 1 if any.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const maxFileLines = 250;
const maxFunctionLines = 60;
const maxTestFunctionLines = 80;
const roots = ['lib', 'tools', 'scripts', 'test'];
const skip = new Set(['node_modules', 'dist', 'fixtures', 'build', 'agents']);

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    if (skip.has(name)) continue;
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) yield* sources(file);
    else if (/\.(ts|cts|mts|mjs)$/.test(name) && !name.endsWith('.d.ts')) yield file;
  }
}

function functionName(node, source) {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(source);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  return '(anonymous)';
}

const problems = [];
for (const root of roots) {
  for (const file of sources(root)) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length;
    const header = text.slice(0, 2000);
    if (lines > maxFileLines && !/^\s*(\*|\/\/)\s*Long because/m.test(header)) {
      problems.push(`${file}: ${lines} lines (over ${maxFileLines}; split it, or say in its header "Long because ...")`);
    }
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const span = end - start + 1;
        const max = file.endsWith('.test.ts') ? maxTestFunctionLines : maxFunctionLines;
        if (span > max) problems.push(`${file}:${start + 1}: function ${functionName(node, source)} is ${span} lines (over ${max})`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}

for (const p of problems) console.error(`check-shape: ${p}`);
if (problems.length > 0) {
  console.error(`check-shape: ${problems.length} problem(s)`);
  process.exit(1);
}
console.error('check-shape: every file is at most 250 lines (or says why) and every function at most 60 lines');
