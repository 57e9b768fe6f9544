#!/usr/bin/env node
// The code's shape, checked in CI (`pnpm check`); prints every offender and exits 1 if any:
// - no source file over 250 lines unless its header comment says why ("Long because ...");
// - no function over 60 lines (80 in a test file, where a claim's steps read best in one
//   place), counted with TypeScript's own parser;
// - no comment that names a source file of ours that does not exist (a file renamed or removed
//   leaves its old name behind in the comments that explained it);
// - no source folder without tests: each folder under a package's src/ has a test folder of the
//   same name under its test/ holding at least one *.test.ts (tests mirror the source).
// `node scripts/check-shape.mjs [REPO]`: this repository, or another git work tree.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import ts from 'typescript';

const maxFileLines = 250;
const maxFunctionLines = 60;
const maxTestFunctionLines = 80;
const roots = ['lib', 'tools', 'scripts', 'test', 'vm'];
const skip = new Set(['node_modules', 'dist', 'fixtures', 'build', 'agents']);
// The repository checked: this one, or the one named (the check's own tests give it a small one).
const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
process.chdir(repo);

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

/** Files over the line limit without a reason in their header, and functions over theirs. */
function lengthProblems(file, text, source) {
  const problems = [];
  const lines = text.split('\n').length;
  if (lines > maxFileLines && !/^\s*(\*|\/\/)\s*Long because/m.test(text.slice(0, 2000))) {
    problems.push(`${file}: ${lines} lines (over ${maxFileLines}; split it, or say in its header "Long because ...")`);
  }
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
  return problems;
}

// ---- comments that name files ------------------------------------------------------------

const tracked = execFileSync('git', ['ls-files'], { encoding: 'utf8' }).split('\n').filter(Boolean);
const trackedSet = new Set(tracked);
const basenames = new Set(tracked.map((f) => path.basename(f)));
/**
 * A name of one of our source files in a comment: a path or a bare name ending in a source
 * extension, its stem starting with a letter (`.d.ts`, `-entry.ts` are suffixes, not names).
 * Data files (auth.json, store.json) are names of what a program writes, not of our sources.
 */
const fileNamePattern = /(?<![\w@/.-])((?:\.{1,2}\/)?(?:[\w@.-]+\/)*[A-Za-z][\w.-]*\.(?:ts|cts|mts|mjs|cjs|sh|md))(?![\w/-])/g;

/**
 * The comments of a file, with their offsets: for code, the comment ranges TypeScript's parser
 * attaches before and after each token (so `//` inside a string or a template is no comment);
 * for shell, `#` to the line's end.
 */
function commentsOf(file, text, source) {
  if (!source) return [...text.matchAll(/(?<=^|\s)#[^\n]*/g)].map((m) => ({ at: m.index, text: m[0] }));
  const ranges = new Map();
  const collect = (list) => list?.forEach((r) => ranges.set(r.pos, r.end));
  const visit = (node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(source)) visit(child);
  };
  visit(source);
  return [...ranges].map(([pos, end]) => ({ at: pos, text: text.slice(pos, end) }));
}

/** Whether a name in `file`'s comment is one of our files, read as a reader of that file would. */
function namesExisting(file, name) {
  const pkg = /^(tools|lib)\/[^/]+/.exec(file)?.[0];
  const candidates = [name, path.join(path.dirname(file), name)];
  if (pkg) candidates.push(path.join(pkg, name), path.join(pkg, 'src', name), path.join(pkg, 'test', name));
  if (candidates.some((c) => trackedSet.has(path.normalize(c)))) return true;
  // A bare name, or a path from inside some package's src/ or test/ (session/run.ts): any file of ours ending so.
  return name.includes('/') ? tracked.some((t) => t.endsWith(`/${name.replace(/^\.\//, '')}`)) : basenames.has(name);
}

function staleNameProblems(file, text, source) {
  const problems = [];
  for (const comment of commentsOf(file, text, source)) {
    for (const m of comment.text.matchAll(fileNamePattern)) {
      if (namesExisting(file, m[1])) continue;
      const line = text.slice(0, comment.at + m.index).split('\n').length;
      problems.push(`${file}:${line}: a comment names ${m[1]}, which is not a file here (renamed or removed? say what it is now)`);
    }
  }
  return problems;
}

// ---- tests mirror the source ----------------------------------------------------------------

const hasTest = (dir) => existsSync(dir) && readdirSync(dir, { recursive: true }).some((n) => String(n).endsWith('.test.ts'));

function untestedFolders() {
  const problems = [];
  for (const group of ['tools', 'lib'].filter((g) => existsSync(g))) {
    for (const pkg of readdirSync(group)) {
      const src = path.join(group, pkg, 'src');
      if (!existsSync(src)) continue;
      for (const entry of readdirSync(src, { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const mirror = path.join(group, pkg, 'test', entry.name);
        if (!hasTest(mirror)) problems.push(`${src}/${entry.name}/: no tests in ${mirror}/ (tests mirror the source folders)`);
      }
    }
  }
  return problems;
}

// ---- all of it -------------------------------------------------------------------------------

const problems = [];
for (const root of roots.filter((r) => existsSync(r))) {
  for (const file of sources(root)) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    problems.push(...lengthProblems(file, text, source), ...staleNameProblems(file, text, source));
  }
}
for (const file of tracked.filter((f) => /\.sh$/.test(f) || f === '.ci/run'))
  problems.push(...staleNameProblems(file, readFileSync(file, 'utf8')));
problems.push(...untestedFolders());

for (const p of problems) console.error(`check-shape: ${p}`);
if (problems.length > 0) {
  console.error(`check-shape: ${problems.length} problem(s)`);
  process.exit(1);
}
console.error(
  'check-shape: every file is at most 250 lines (or says why), every function at most 60 lines, every file a comment names exists, and every source folder has tests',
);
