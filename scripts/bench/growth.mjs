// Section 5: launch time as work grows beside the session: 1, 10 and 100 worktrees of one
// repository plus as many staged credential directories, and a workspace of 10 or 100 000 files.
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compare, options, printCases, tag } from './common.mjs';
import { filledWorkspace, launcher, makeRoot, worktreeWorkspaces } from './fixture.mjs';

function worktreeCase(count) {
  const root = makeRoot(`s5-${count}`);
  const { ids } = worktreeWorkspaces(root, `${tag}-g${count}-`, count);
  for (const other of ids.slice(1)) {
    const dir = path.join(root, 'secrets', other, 'codex');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'auth.json'), '{}', { mode: 0o400 });
  }
  for (const id of ids) chownSync(path.join(root, 'workspaces', id), 1000, 1000);
  return launcher('run', root, ids[0]);
}

function filesCase(files) {
  const root = makeRoot(`s5-f${files}`);
  const id = `${tag}-f${files}`;
  filledWorkspace(root, id, files);
  return launcher('run', root, id);
}

export async function growth() {
  const n = Math.max(5, Math.ceil(options.runs / 2));
  const worktreeCases = Object.fromEntries([1, 10, 100].map((c) => [`${c} worktree(s) + staged creds`, worktreeCase(c)]));
  const fileCases = Object.fromEntries([10, 100_000].map((f) => [`workspace of ${f} files`, filesCase(f)]));
  const r = await compare({ ...worktreeCases, ...fileCases }, n);
  const pick = (cases) => Object.fromEntries(Object.keys(cases).map((k) => [k, r[k]]));
  console.log(`\n5. launch time as work grows (${n} runs each, interleaved; ratios to the smallest case)`);
  printCases(pick(worktreeCases), r['1 worktree(s) + staged creds'].median);
  printCases(pick(fileCases), r['workspace of 10 files'].median);
  return r;
}
