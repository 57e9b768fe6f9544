#!/usr/bin/env node
// Each situation one error code (pnpm check). Callers branch on a code, so two codes for one
// situation split their scripts' branches, and one of them is always the one a caller forgot.
// Fails, naming both codes and where, when:
// - two rows of the table (lib/shared/src/error-codes.ts) say the same meaning;
// - one refusal message (the template of `new ToolError(exit, code, message)`, its ${...} parts
//   aside) is thrown with two codes;
// - one condition on a named thing (the `if` a refusal is thrown under, when it tests more than
//   a generic result such as `out.status`) is answered with two codes.
// `node scripts/check-codes.mjs [REPO]`: this repository, or another with the same layout.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const normal = (text) => text.replace(/\s+/g, ' ').trim();

/** The table's rows: code -> { exit: meaning }, read from the object literal `errorCodes`. */
function tableRows(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const rows = [];
  const visit = (node) => {
    if (ts.isVariableDeclaration(node) && node.name.getText(source) === 'errorCodes') {
      let table = node.initializer;
      while (table && !ts.isObjectLiteralExpression(table)) table = table.expression;
      for (const row of table?.properties ?? []) {
        const code = row.name.text ?? row.name.getText(source);
        for (const exit of row.initializer.properties ?? [])
          rows.push({ code, exit: exit.name.getText(source), meaning: exit.initializer.text ?? exit.initializer.getText(source) });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return rows;
}

function* sources(dir) {
  for (const name of readdirSync(dir)) {
    if (['node_modules', 'dist', 'test'].includes(name)) continue;
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) yield* sources(file);
    else if (/\.c?ts$/.test(name) && !name.endsWith('.d.ts')) yield file;
  }
}

/** A refusal's message with its ${...} parts aside, or undefined when it is not written out. */
function templateOf(node) {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) return node.head.text + node.templateSpans.map((s) => `\${}${s.literal.text}`).join('');
  return undefined;
}

// Results everyone tests: a condition on one of these alone is about a different thing at each place.
const generic = new Set([
  'out',
  'result',
  'res',
  'r',
  'info',
  'st',
  'stat',
  'err',
  'error',
  'e',
  'match',
  'm',
  'status',
  'exitCode',
  'code',
  'ok',
  'keyword',
  'isSymbolicLink',
  'isDirectory',
  'isFile',
  'length',
]);

/** The condition a refusal is thrown under, when it names something particular. */
function conditionOf(node, source) {
  let at = node.parent;
  while (at && !ts.isIfStatement(at) && !ts.isFunctionLike(at)) at = at.parent;
  if (!at || !ts.isIfStatement(at)) return undefined;
  const names = [];
  const collect = (n) => {
    if (ts.isIdentifier(n)) names.push(n.text);
    ts.forEachChild(n, collect);
  };
  collect(at.expression);
  const particular = names.filter(
    (n) => !generic.has(n) && !/^(existsSync|lstatSync|statSync|path|isAbsolute|test|includes|startsWith|endsWith)$/.test(n),
  );
  return particular.length > 0 ? normal(at.expression.getText(source)) : undefined;
}

/** Every `new ToolError(exit, 'code', message)` in the packages' sources: its code, message template, condition and place. */
function refusals() {
  const found = [];
  for (const group of ['tools', 'lib']) {
    if (!existsSync(path.join(repo, group))) continue;
    for (const pkg of readdirSync(path.join(repo, group))) {
      const src = path.join(repo, group, pkg, 'src');
      if (!existsSync(src)) continue;
      for (const file of sources(src)) {
        const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
        const visit = (node) => {
          if (
            ts.isNewExpression(node) &&
            node.expression.getText(source) === 'ToolError' &&
            node.arguments?.length >= 3 &&
            ts.isStringLiteral(node.arguments[1])
          ) {
            const where = `${path.relative(repo, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
            found.push({
              code: node.arguments[1].text,
              template: templateOf(node.arguments[2]),
              condition: conditionOf(node, source),
              where,
            });
          }
          ts.forEachChild(node, visit);
        };
        visit(source);
      }
    }
  }
  return found;
}

/** Groups by a key; the groups holding more than one code. */
function twoCodes(items, keyOf, what) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    groups.set(key, [...(groups.get(key) ?? []), item]);
  }
  return [...groups]
    .filter(([, group]) => new Set(group.map((i) => i.code)).size > 1)
    .map(
      ([key, group]) =>
        `${what} ${JSON.stringify(key)} has ${[...new Set(group.map((i) => i.code))].join(' and ')} (${group.map((i) => `${i.code} at ${i.where}`).join('; ')}): one situation, one code`,
    );
}

const rows = tableRows(path.join(repo, 'lib/shared/src/error-codes.ts'));
const found = refusals();
const problems = [
  ...twoCodes(
    rows.map((r) => ({ ...r, where: `the table, ${r.exit}` })),
    (r) =>
      normal(r.meaning)
        .toLowerCase()
        .replace(/[^a-z0-9 ]/g, ''),
    'the meaning',
  ),
  ...twoCodes(
    found,
    (f) => (f.template && f.template.replace(/\$\{\}/g, '').trim().length >= 12 ? normal(f.template) : undefined),
    'the message',
  ),
  ...twoCodes(found, (f) => f.condition, 'the condition'),
];
for (const p of problems) console.error(`check-codes: ${p}`);
if (problems.length > 0) {
  console.error(`check-codes: ${problems.length} problem(s)`);
  process.exit(1);
}
console.error(`check-codes: ${rows.length} rows, ${found.length} refusals: each meaning, message and named condition has one code`);
