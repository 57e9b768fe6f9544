// Differential test of the gitfile parser against real git: for every variant of
// a `.git` file, whenever detectGit accepts, `git rev-parse --absolute-git-dir
// --git-common-dir` must succeed and name the same directories. Every variant git
// reads differently from us (or refuses) must be refused (87).
import t from 'tap';
import fc from 'fast-check';
import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { tempDir } from '@agent-sandbox/testkit';
import { detectGit } from '../../dist/index.js';
import { git, worktreeSession } from '../fixtures/git-tree.js';

interface Verdict {
  accepted: boolean;
  gitDir?: string;
  commonDir?: string;
  code?: string;
  exitCode?: number;
}

async function ours(workspace: string): Promise<Verdict> {
  try {
    const d = await detectGit({ workspace, containerWorkspace: '/sandbox/workspaces/s1' });
    return { accepted: d.kind !== 'none', gitDir: d.gitDir, commonDir: d.commonDir };
  } catch (err) {
    const e = err as { code?: string; exitCode?: number };
    return { accepted: false, code: e.code, exitCode: e.exitCode };
  }
}

async function theirs(workspace: string): Promise<Verdict> {
  const r = await git(['rev-parse', '--absolute-git-dir', '--git-common-dir'], workspace, false);
  if (r.exitCode !== 0) return { accepted: false };
  const [gitDir, common] = r.stdout.split('\n');
  if (!gitDir || !common) return { accepted: false };
  return { accepted: true, gitDir, commonDir: await realpath(nodePath.resolve(workspace, common)) };
}

t.test('detectGit never accepts a gitfile that git reads differently', async (t) => {
  const base = await tempDir(t, 'mount-plan-diff-');
  const tree = await worktreeSession(base);
  const G = `${tree.common}/worktrees/s1`;
  await symlink(G, `${base}/gitdir-link`);
  await mkdir(`${base}/gitroot/sep`);
  await git(['init', '-q', '--bare', `${base}/gitroot/sep.git`], base);
  const rel = nodePath.relative(tree.workspace, G);
  const ws = tree.workspace;
  const enc = (s: string) => Buffer.from(s, 'utf8');
  const rows: [string, Buffer, 'accept' | 'refuse' | 'either'][] = [
    ['absolute path with newline', enc(`gitdir: ${G}\n`), 'accept'],
    ['absolute path without newline', enc(`gitdir: ${G}`), 'accept'],
    ['a full git dir elsewhere (separate git dir)', enc(`gitdir: ${base}/gitroot/sep.git\n`), 'accept'],
    ['CRLF line end', enc(`gitdir: ${G}\r\n`), 'refuse'],
    ['two trailing newlines', enc(`gitdir: ${G}\n\n`), 'refuse'],
    ['trailing CR only', enc(`gitdir: ${G}\r`), 'refuse'],
    ['UTF-8 BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), enc(`gitdir: ${G}\n`)]), 'refuse'],
    ['BOM after the prefix', Buffer.concat([enc('gitdir: '), Buffer.from([0xef, 0xbb, 0xbf]), enc(`${G}\n`)]), 'refuse'],
    ['trailing space', enc(`gitdir: ${G} \n`), 'refuse'],
    ['trailing tab', enc(`gitdir: ${G}\t\n`), 'refuse'],
    ['two spaces after the colon', enc(`gitdir:  ${G}\n`), 'refuse'],
    ['no space after the colon', enc(`gitdir:${G}\n`), 'refuse'],
    ['upper-case prefix', enc(`GITDIR: ${G}\n`), 'refuse'],
    ['leading blank line', enc(`\ngitdir: ${G}\n`), 'refuse'],
    ['NUL then junk (git stops at the NUL)', Buffer.concat([enc(`gitdir: ${G}`), Buffer.from([0]), enc('junk\n')]), 'refuse'],
    ['NUL at the end', Buffer.concat([enc(`gitdir: ${G}\n`), Buffer.from([0])]), 'refuse'],
    ['second line of junk', enc(`gitdir: ${G}\njunk\n`), 'refuse'],
    ['junk after the path on the same line', enc(`gitdir: ${G}junk\n`), 'refuse'],
    ['missing prefix', enc(`${G}\n`), 'refuse'],
    ['empty file', Buffer.alloc(0), 'refuse'],
    ['prefix and nothing else', enc('gitdir: '), 'refuse'],
    ['prefix and a newline', enc('gitdir: \n'), 'refuse'],
    ['over 1 MiB', Buffer.concat([enc(`gitdir: ${G}`), Buffer.alloc((1 << 20) + 1, 0x0a)]), 'refuse'],
    ['under 1 MiB but padded with newlines', Buffer.concat([enc(`gitdir: ${G}`), Buffer.alloc((1 << 20) - 200, 0x0a)]), 'refuse'],
    ['relative path to the same gitdir', enc(`gitdir: ${rel}\n`), 'refuse'],
    ['trailing slash', enc(`gitdir: ${G}/\n`), 'refuse'],
    ['dot-dot segment', enc(`gitdir: ${G}/../s1\n`), 'refuse'],
    ['double slash', enc(`gitdir: ${G.replace('/worktrees/', '//worktrees/')}\n`), 'refuse'],
    ['through a symlink', enc(`gitdir: ${base}/gitdir-link\n`), 'refuse'],
    ['a directory that does not exist', enc(`gitdir: ${base}/nowhere\n`), 'refuse'],
    ['a directory that is not a git dir', enc(`gitdir: ${base}/gitroot/sep\n`), 'refuse'],
    ['invalid UTF-8 in the path', Buffer.concat([enc(`gitdir: ${G}`), Buffer.from([0xff, 0xfe]), enc('\n')]), 'refuse'],
    ['control character in the path', enc(`gitdir: ${G}\u0001\n`), 'refuse'],
  ];
  let ran = 0;
  const gitOnly: string[] = [];
  for (const [label, bytes, expected] of rows) {
    await writeFile(`${ws}/.git`, bytes);
    const [a, b] = [await ours(ws), await theirs(ws)];
    if (a.accepted) {
      t.ok(b.accepted, `${label}: git accepts what we accept`);
      t.equal(a.gitDir, b.gitDir, `${label}: same git dir as git`);
      t.equal(a.commonDir, b.commonDir, `${label}: same common dir as git`);
    } else {
      t.equal(a.exitCode, 87, `${label}: refused with 87 (${a.code})`);
      if (b.accepted) gitOnly.push(label);
    }
    if (expected !== 'either') t.equal(a.accepted, expected === 'accept', `${label}: we ${expected}`);
    ran += 1;
  }
  t.equal(ran, rows.length, 'every row ran');
  t.comment(`git accepts, we refuse (stricter on purpose): ${gitOnly.join('; ')}`);
  t.ok(gitOnly.includes('CRLF line end'), 'git itself accepts CRLF: the refusal is ours, by design');
});

t.test('random mutations of a valid gitfile: whatever we accept, git reads the same', async (t) => {
  const base = await tempDir(t, 'mount-plan-fuzz-');
  const tree = await worktreeSession(base);
  const valid = Buffer.from(`gitdir: ${tree.common}/worktrees/s1\n`);
  let runs = 0;
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ at: fc.nat({ max: valid.length }), del: fc.nat({ max: 2 }), ins: fc.uint8Array({ maxLength: 3 }) }), {
        minLength: 0,
        maxLength: 3,
      }),
      async (edits) => {
        let bytes = Buffer.from(valid);
        for (const e of edits) {
          const at = Math.min(e.at, bytes.length);
          bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from(e.ins), bytes.subarray(at + e.del)]);
        }
        await writeFile(`${tree.workspace}/.git`, bytes);
        const [a, b] = [await ours(tree.workspace), await theirs(tree.workspace)];
        runs += 1;
        if (!a.accepted) return a.exitCode === 87;
        accepted += 1;
        return b.accepted && a.gitDir === b.gitDir && a.commonDir === b.commonDir;
      },
    ),
    { numRuns: 150, seed: 4242 },
  );
  t.equal(runs, 150, 'every generated case ran');
  t.ok(accepted > 0, `some mutations are still valid and accepted (${accepted})`);
});
