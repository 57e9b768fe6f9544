#!/usr/bin/env node
// The VM tier's two host-side steps around the guest, so the shell scripts stay plumbing:
//   node vm/suite.mjs lists SUITE_TXT REPO OUTDIR   suite.txt -> OUTDIR/{root,user}.list
//   node vm/suite.mjs totals OUTDIR LISTDIR         per-user totals of OUTDIR/{root,user}.tap
// `totals` exits 1 when a listed file did not run, or skipped all its tests as that user (list it
// for the other user only), anything failed, a runner exited non-zero, no assertion passed (an
// empty or cut-short TAP stream is a failure, never a pass) or a test skipped for a reason the
// guest's machine does not have (scripts/skips.mjs); every skip is printed with its reason.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Parser } from 'tap-parser';
import { judge, report, skipsOf } from '../scripts/skips.mjs';

const users = ['root', 'user'];

/** suite.txt: one test file a line (repo-relative), optionally followed by "root" or "user". */
function parseSuite(text) {
  const lists = { root: [], user: [] };
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) return;
    const [file, only, extra] = line.split(/\s+/);
    if (extra !== undefined || (only !== undefined && !users.includes(only))) {
      throw new Error(`suite.txt line ${i + 1}: expected "FILE [root|user]", got ${JSON.stringify(raw)}`);
    }
    for (const who of only ? [only] : users) lists[who].push(file);
  });
  return lists;
}

function writeLists(suiteFile, repo, outDir) {
  const lists = parseSuite(readFileSync(suiteFile, 'utf8'));
  const missing = [...lists.root, ...lists.user].filter((f) => !existsSync(path.join(repo, f)));
  if (missing.length > 0) throw new Error(`suite.txt names files that do not exist: ${[...new Set(missing)].join(', ')}`);
  // The guest runs each test file as the JS that vm/payload.sh makes beside it; its TAP names that.
  const asRun = (f) => f.replace(/\.ts$/, '.js');
  for (const who of users) writeFileSync(path.join(outDir, `${who}.list`), lists[who].map((f) => `${asRun(f)}\n`).join(''));
  console.error(`vm: suite: ${lists.root.length} files as root, ${lists.user.length} as uid 1000`);
}

/**
 * Counts a TAP stream: top-level points are test files; assertions are the leaves below them
 * (a subtest's own closing point is not an assertion, unless it failed with no failing child,
 * as a crashed or timed-out file does; a skipped subtest counts as one skip, as tap does).
 */
function countTap(text) {
  // allSkipped: the files in which nothing ran (every test skipped, or the file itself).
  const files = { pass: 0, fail: 0, skip: 0, names: [], allSkipped: [] };
  const asserts = { pass: 0, fail: 0, skip: 0, todo: 0 };
  // Assertions that measure against a bound ("... (bound N ms ...)") and todos, said by name in
  // the totals: a CI page keeps the guest's margins without the TAP.
  const named = [];
  let complete;
  let ranInFile = 0;
  const leaf = (a) => {
    if (a.skip) asserts.skip += 1;
    else if (a.todo) asserts.todo += 1;
    else if (a.ok) asserts.pass += 1;
    else asserts.fail += 1;
    if (!a.skip && !a.todo) ranInFile += 1;
    if (a.todo || /\(bound \d+ ?m?s\b/.test(a.name)) named.push(`${a.todo ? 'todo' : a.ok ? 'ok' : 'not ok'}: ${a.name}`);
  };
  const watch = (parser, depth) => {
    let child;
    parser.on('child', (c) => {
      child = { failsBefore: asserts.fail };
      if (depth === 0) ranInFile = 0;
      watch(c, depth + 1);
    });
    parser.on('assert', (a) => {
      if (depth === 0) {
        files.names.push(a.name);
        if (a.skip) files.skip += 1;
        else if (a.ok) files.pass += 1;
        else files.fail += 1;
        if (a.skip || (a.ok && ranInFile === 0)) files.allSkipped.push(a.name);
      }
      if (child) {
        if (!a.ok && !a.todo && asserts.fail === child.failsBefore) asserts.fail += 1;
        child = undefined;
      } else if (depth > 0) leaf(a);
    });
  };
  const parser = new Parser((results) => (complete = results));
  watch(parser, 0);
  parser.end(text);
  return {
    files,
    asserts,
    named,
    bailout: Boolean(complete?.bailout),
    planned: complete?.plan?.end ?? 0,
    complete: Boolean(complete?.ok !== undefined),
  };
}

function totals(outDir, listDir) {
  let bad = 0;
  for (const who of users) {
    const listed = readFileSync(path.join(listDir, `${who}.list`), 'utf8')
      .split('\n')
      .filter(Boolean);
    if (listed.length === 0) continue;
    const label = who === 'root' ? 'root' : 'uid 1000';
    const tapFile = path.join(outDir, `${who}.tap`);
    if (!existsSync(tapFile)) {
      console.log(`vm: ${label}: no TAP came back (${tapFile} missing)`);
      bad += 1;
      continue;
    }
    const tapText = readFileSync(tapFile, 'utf8');
    const c = countTap(tapText);
    const statusFile = path.join(outDir, `${who}.status`);
    const status = existsSync(statusFile) ? readFileSync(statusFile, 'utf8').trim() : 'missing';
    const ran = new Set(c.files.names);
    const notRun = listed.filter((f) => !ran.has(f));
    console.log(
      `vm: ${label}: ${c.files.names.length}/${listed.length} test files (${c.files.pass} passed, ${c.files.fail} failed, ${c.files.skip} skipped); ` +
        `assertions: ${c.asserts.pass} pass, ${c.asserts.fail} fail, ${c.asserts.skip} skip, ${c.asserts.todo} todo; tap exit ${status}`,
    );
    const skips = report(judge(skipsOf(tapText), `vm-${who}`), `vm-${who}`);
    for (const line of skips.lines) console.log(`vm: ${label}: ${line}`);
    for (const line of c.named) console.log(`vm: ${label}: measured ${line}`);
    const problems = [];
    if (notRun.length > 0) problems.push(`did not run: ${notRun.join(', ')}`);
    // A file listed for this user that only skips here proves nothing here: list it for the other user only.
    if (c.files.allSkipped.length > 0)
      problems.push(`every test skipped as ${label} (list it for the other user only in suite.txt): ${c.files.allSkipped.join(', ')}`);
    if (c.files.fail > 0 || c.asserts.fail > 0) problems.push('failures');
    if (c.asserts.pass === 0) problems.push('no assertion passed');
    if (c.bailout) problems.push('bailed out');
    if (status !== '0') problems.push(`tap exited ${status}`);
    if (skips.unexpected > 0) problems.push(`${skips.unexpected} skip(s) the guest has what they need for`);
    const leakFile = path.join(outDir, `leak-${who}.status`);
    const leak = existsSync(leakFile) ? readFileSync(leakFile, 'utf8').trim() : 'missing';
    if (leak !== '0')
      problems.push(`the leak check ${leak === 'missing' ? 'did not run' : `found leftovers (${path.join(outDir, `leak-${who}.log`)})`}`);
    if (problems.length > 0) {
      console.log(`vm: ${label}: FAILED (${problems.join('; ')}); see ${tapFile}`);
      bad += 1;
    }
  }
  return bad === 0 ? 0 : 1;
}

const [verb, ...args] = process.argv.slice(2);
try {
  if (verb === 'lists' && args.length === 3) writeLists(args[0], args[1], args[2]);
  else if (verb === 'totals' && args.length === 2) process.exitCode = totals(args[0], args[1]);
  else throw new Error('usage: node vm/suite.mjs lists SUITE_TXT REPO OUTDIR | totals OUTDIR LISTDIR');
} catch (err) {
  console.error(`vm: ${err.message}`);
  process.exitCode = 1;
}
