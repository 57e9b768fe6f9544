// What the user's own tools meet in a workspace after a session (issue 32): one session in a
// linked worktree made by `agent-sandbox workspace new` plants, as an agent would, a nested
// repository committed as a gitlink whose core.fsmonitor is a command; an index listing
// `../../outside-by-index`; 10 000-level trees in its home, its workspace and its git store; and
// FIFOs at .gitignore, sub/.gitignore, .gitattributes, Makefile, package.json and sub2/.git. Then
// the owner (uid 1000) runs git status at the top and in the nested folder, `git checkout -- .`
// and make there, and the launcher lists the workspace, runs it again and removes it. Each row's
// control replays its plant on the host without the launcher and shows the harm.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { binPath, tempDir, type Teardown } from '@agent-sandbox/testkit';
import { hostGit } from './git-attacks.js';
import { addWorkspace, chownAgent, launch, ledgerLines, sessionRoot, type SessionRoot } from './session-kit.js';

export const depth = 10_000;
const ident = {
  GIT_AUTHOR_NAME: 'agent',
  GIT_AUTHOR_EMAIL: 'a@sandbox.invalid',
  GIT_COMMITTER_NAME: 'agent',
  GIT_COMMITTER_EMAIL: 'a@sandbox.invalid',
};
const fifos = ['.gitignore', 'sub/.gitignore', '.gitattributes', 'Makefile', 'package.json', 'sub2/.git'];

/** The index written again with `../../outside-by-index` in place of its same-length placeholder, its SHA-1 made right. */
const swapInIndex = `perl -MDigest::SHA=sha1 -e 'local $/; open my $f, "<:raw", $ARGV[0] or die; my $d = <$f>; close $f; $d =~ s{zz/zz/outside-by-index}{../../outside-by-index} or die "no placeholder"; substr($d, -20) = sha1(substr($d, 0, -20)); open $f, ">:raw", $ARGV[0] or die; print $f $d; close $f'`;
/** `deep/d/d/...` below each directory named, one relative step at a time (no path grows past PATH_MAX). */
const makeDeep = `perl -e 'for my $b (@ARGV) { chdir $b or die "$b: $!"; mkdir "deep" or die; chdir "deep" or die; for (1..${depth}) { mkdir "d" or die "$!"; chdir "d" or die } }'`;

/** The lines that plant the nested repository (its fsmonitor touching `marker`) and commit it; run inside and, for the control, on the host. */
export function nestedPlant(marker: string): string[] {
  return [
    'git init -q nested',
    'git -C nested commit -q --allow-empty -m n',
    'git add nested',
    "git commit -qm 'a nested repository'",
    `git -C nested config core.fsmonitor "touch ${marker}; false"`,
  ];
}

/** The index plant: README's blob under a placeholder path, then the path swapped to one outside. */
export const indexPlant = [
  'git update-index --add --cacheinfo "100644,$(git rev-parse HEAD:README),zz/zz/outside-by-index"',
  `${swapInIndex} "$(git rev-parse --git-dir)/index"`,
];

/** The agent's whole plant, ending with its own status 7 (the FIFOs last: the agent's own git would meet them). */
function agentScript(marker: string): string {
  return [
    '#!/bin/sh',
    'set -e',
    ...Object.entries(ident).map(([k, v]) => `export ${k}=${v}`),
    ...nestedPlant(marker),
    ...indexPlant,
    `${makeDeep} "$HOME" "$PWD" "$(git rev-parse --path-format=absolute --git-common-dir)"`,
    'mkdir -p sub sub2',
    `mkfifo ${fifos.join(' ')}`,
    'exit 7',
  ].join('\n');
}

/** A command's status and how long it took; `timeout 10` kills what would block. */
async function timed(cwd: string, argv: string[], owner?: { base: string }) {
  const began = Date.now();
  const out = owner ? await hostGit(owner.base, cwd, argv) : await execa('timeout', ['10', ...argv], { cwd, reject: false });
  return { exitCode: out.exitCode ?? -1, stderr: String(out.stderr), ms: Date.now() - began };
}

async function launcher(r: SessionRoot, args: string[]) {
  const began = Date.now();
  const out = await execa(binPath('agent-sandbox'), [...args, '--root', r.root], {
    env: r.env,
    extendEnv: false,
    reject: false,
    timeout: 120_000,
  });
  return { exitCode: out.exitCode ?? -1, stdout: String(out.stdout), stderr: String(out.stderr), ms: Date.now() - began };
}

/** The session, then everything the owner and the launcher do in that workspace afterwards. */
export async function userToolsSession(t: Teardown) {
  const r = await sessionRoot(t, 'usertools');
  const repo = path.join(r.base, 'repo');
  await mkdir(repo, { recursive: true });
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['commit', '-q', '--allow-empty', '-m', 'initial'],
  ])
    await execa('git', args, { cwd: repo, env: ident });
  await writeFile(path.join(repo, 'README'), 'read me\n');
  await execa('git', ['add', 'README'], { cwd: repo });
  await execa('git', ['commit', '-qm', 'README'], { cwd: repo, env: ident });
  const ws = await addWorkspace(t, r, 'usertools', {}, async (wsPath) => {
    const made = await launcher(r, ['workspace', 'new', path.basename(wsPath), '--repo', repo]);
    if (made.exitCode !== 0) throw new Error(`workspace new: ${made.stderr}`);
  });
  const marker = path.join(r.base, 'markers', 'FSMONITOR-RAN');
  await mkdir(path.dirname(marker), { recursive: true });
  await mkdir(path.join(r.base, 'host-user-home'), { recursive: true });
  await chownAgent(repo, path.dirname(marker), path.join(r.base, 'host-user-home'));
  await writeFile(path.join(ws.path, '.astest', 'plant.sh'), agentScript(marker), { mode: 0o755 });
  await chownAgent(ws.path);
  const end = await launch(r, ws, `${ws.inside}/.astest/plant.sh`, [], [], 600_000).done;
  const owner = { base: r.base };
  const after = {
    statusTop: await timed(ws.path, ['status', '--porcelain'], owner),
    statusNested: await timed(path.join(ws.path, 'nested'), ['status', '--porcelain'], owner),
    checkout: await timed(ws.path, ['checkout', '--', '.'], owner),
    make: await timed(ws.path, ['make']),
    list: await launcher(r, ['workspace', 'list', '--json']),
  };
  const indexPaths = (await hostGit(r.base, ws.path, ['ls-files'])).stdout.split('\n').filter(Boolean);
  const fsmonitorRan = existsSync(marker);
  const outside = existsSync(path.join(r.root, 'outside-by-index'));
  const storeLeft = existsSync(path.join(r.root, 'git-stores', ws.id));
  const next = await launch(r, ws, '/bin/sh', ['-c', 'exit 3']).done;
  const rm = await launcher(r, ['workspace', 'rm', ws.id, '--force']);
  const left = ['workspaces', 'homes', 'git-stores'].filter((d) => existsSync(path.join(r.root, d, ws.id)));
  return { end, line: ledgerLines(ws)[0], after, indexPaths, fsmonitorRan, outside, storeLeft, next, rm, left };
}

/** The same plants on the host, without the launcher: what each does to the owner's tools there. */
export async function userToolsControls(t: Teardown) {
  const base = await tempDir(t, 'usertools-control-');
  // Two levels down, so that the index's ../../outside-by-index lands in base.
  const top = path.join(base, 'a', 'top');
  await mkdir(top, { recursive: true });
  const marker = path.join(base, 'FSMONITOR-RAN');
  const sh = (lines: string[], cwd = top) => execa('sh', ['-ec', lines.join('\n')], { cwd, env: ident, reject: false });
  await sh(['git init -q -b main', 'echo read me > README', 'git add README', 'git commit -qm README', ...nestedPlant(marker)]);
  await execa('git', ['status', '--porcelain'], { cwd: top, reject: false, timeout: 10_000 });
  const fsmonitorRan = existsSync(marker);
  await sh([...indexPlant, 'git checkout -- .']);
  const outside = existsSync(path.join(base, 'outside-by-index'));
  await sh(['mkfifo .gitignore']);
  const blocked = await timed(top, ['git', 'status', '--porcelain']);
  const deep = await execa(
    'node',
    [
      '-e',
      `const fs = require('fs'); process.chdir(process.argv[1]); fs.mkdirSync('deep'); process.chdir('deep'); for (let i = 0; i < ${depth}; i += 1) { fs.mkdirSync('d'); process.chdir('d'); } try { fs.rmSync(process.argv[1] + '/deep', { recursive: true, force: true }); console.log('removed'); } catch (e) { console.log(e.message); }`,
      base,
    ],
    { reject: false },
  );
  await execa('rm', ['-rf', '--one-file-system', '--', path.join(base, 'deep')]);
  return { fsmonitorRan, outside, gitStatusOnFifo: blocked, rmSync: String(deep.stdout) };
}
