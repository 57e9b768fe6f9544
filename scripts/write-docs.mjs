#!/usr/bin/env node
// Writes the READMEs' tables of exit codes and error codes from the tables in lib/shared
// (exit-codes.ts, error-codes.ts; built): each table sits between marker comments, and
// everything between them is rewritten.
//
//   <!-- exit-codes:begin --> ... <!-- exit-codes:end -->                the exit table
//   <!-- error-codes:begin tool=NAME --> ... <!-- error-codes:end -->    NAME's codes: exit, code, when
//   <!-- error-codes:begin tool=NAME by=exit --> ...                     the same, one row per exit
//
// Which codes a tool can answer with is read from its code (scripts/error-code-uses.mjs).
// `--check` rewrites nothing and exits 1 when a table differs from what it would write, or when
// a code of the table is used by no tool (pnpm check runs it).
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { errorCodeUses } from './error-code-uses.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const dist = (file) => pathToFileURL(path.join(repo, 'lib', 'shared', 'dist', file)).href;
const { exitTable } = await import(dist('exit-codes.js'));
const { errorCodes } = await import(dist('error-codes.js'));

const tools = readdirSync(path.join(repo, 'tools'))
  .filter((t) => existsSync(path.join(repo, 'tools', t, 'src', 'cli.ts')))
  .sort();
const exitNumber = (name) => exitTable[name].exit;

function exitsTable() {
  const rows = Object.values(exitTable).map((row) => `| ${row.exit} | ${cell(row.meaning)} |`);
  return [
    '| exit | meaning (the message names the cause) |',
    '|---|---|',
    "| 0..255 | the contained command's own status, passed through unchanged |",
    ...rows,
  ].join('\n');
}

/** A table cell: a | in the text would end it. */
const cell = (text) => text.replaceAll('|', '\\|');

function codesTable(uses, byExit) {
  const sorted = [...uses].sort((a, b) => exitNumber(a.exit) - exitNumber(b.exit) || a.code.localeCompare(b.code));
  if (!byExit) {
    return [
      '| exit | code | when |',
      '|---|---|---|',
      ...sorted.map((u) => `| ${exitNumber(u.exit)} | \`${u.code}\` | ${cell(errorCodes[u.code][u.exit])} |`),
    ].join('\n');
  }
  const exits = [...new Set(sorted.map((u) => u.exit))];
  const rows = exits.map(
    (exit) =>
      `| ${exitNumber(exit)} | ${cell(exitTable[exit].meaning)} | ${sorted
        .filter((u) => u.exit === exit)
        .map((u) => `\`${u.code}\``)
        .join(', ')} |`,
  );
  return ['| exit | meaning | codes |', '|---|---|---|', ...rows].join('\n');
}

/** The markdown files that may hold tables. */
function documents() {
  const docs = path.join(repo, 'docs');
  return [
    path.join(repo, 'README.md'),
    ...tools.map((t) => path.join(repo, 'tools', t, 'README.md')),
    ...readdirSync(docs)
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(docs, f)),
  ].filter((file) => existsSync(file));
}

const block = /(<!-- (exit-codes|error-codes):begin([^>]*)-->\n)([\s\S]*?)(<!-- \2:end -->)/g;
const uses = errorCodeUses(repo, tools, errorCodes);
const problems = [];
for (const file of documents()) {
  const text = readFileSync(file, 'utf8');
  const next = text.replace(block, (_all, begin, kind, attrs, _old, end) => {
    if (kind === 'exit-codes') return `${begin}${exitsTable()}\n${end}`;
    const tool = /\btool=([\w-]+)/.exec(attrs)?.[1];
    if (!tool || !uses[tool]) {
      problems.push(`${path.relative(repo, file)}: error-codes block names no tool of tools/ (${attrs.trim()})`);
      return `${begin}${_old}${end}`;
    }
    return `${begin}${codesTable(uses[tool], /\bby=exit\b/.test(attrs))}\n${end}`;
  });
  if (next === text) continue;
  if (check)
    problems.push(
      `${path.relative(repo, file)}: a generated table differs from the tables in lib/shared (run node scripts/write-docs.mjs)`,
    );
  else writeFileSync(file, next);
}
const used = new Set(Object.values(uses).flatMap((list) => list.map((u) => u.code)));
for (const code of Object.keys(errorCodes))
  if (!used.has(code)) problems.push(`lib/shared/src/error-codes.ts: ${code} is used by no tool (remove its row)`);

for (const p of problems) console.error(`write-docs: ${p}`);
if (problems.length > 0) process.exit(1);
console.error(`write-docs: ${check ? "the READMEs' tables match" : "wrote the READMEs' tables from"} the exit and error code tables`);
