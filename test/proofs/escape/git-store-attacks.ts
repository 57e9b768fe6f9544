// The host's repository against what a session does to its git state (issue 23), through the
// launcher, in a linked worktree and a plain repository. The wipe session acts as an attacker
// and then as an honest agent: it works a little (a commit), deletes every object file it sees
// (its store's and the host's), its refs, packed-refs and logs, and tries to move the
// alternates file that ties its store to the host's objects away; then it puts its branch back
// at the tip it remembered from the start and makes its honest commit. The flood session makes
// its honest commit, then 100 000 refs, moves another branch and a tag, adds a replace ref and
// a note and runs gc --prune=now. The host's own git says what happened (fsck --full,
// for-each-ref and rev-parse before and after, as the host user). Controls (git-store-controls.ts)
// show each check can fail. And a commit made before a kill -9 of the launcher comes home by
// the next start.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { runPodman } from '@agent-sandbox/shared/podman';
import { containerName, hardeningFlags, settledWithin, type Teardown } from '@agent-sandbox/testkit';
import { hostGit, type GitKind } from './git-attacks.js';
import { sentinelPids } from './lifecycle.js';
import {
  addWorkspace,
  chownAgent,
  launch,
  launcherCommand,
  ledgerLines,
  sleep,
  waitFor,
  type LaunchEnd,
  type SessionRoot,
  type Workspace,
} from './session-kit.js';

export type StoreAttack = 'wipe' | 'flood';
export const storeAttacks: StoreAttack[] = ['wipe', 'flood'];
const ident = {
  GIT_AUTHOR_NAME: 'host',
  GIT_AUTHOR_EMAIL: 'host@example.invalid',
  GIT_COMMITTER_NAME: 'host',
  GIT_COMMITTER_EMAIL: 'host@example.invalid',
};

async function setupGit(cwd: string, ...args: string[]): Promise<void> {
  await execa('git', args, {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', ...ident },
    extendEnv: false,
  });
}

/** main with two commits, a light tag v1, an annotated tag v2, another branch; packed refs and loose ones. */
export async function seed(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await setupGit(dir, 'init', '-q', '-b', 'main');
  await setupGit(dir, 'commit', '-q', '--allow-empty', '-m', 'first');
  await setupGit(dir, 'tag', 'v1');
  await setupGit(dir, 'branch', 'other');
  await setupGit(dir, 'pack-refs', '--all');
  await setupGit(dir, 'commit', '-q', '--allow-empty', '-m', 'second');
  await setupGit(dir, 'tag', '-a', '-m', 'annotated', 'v2');
}

export interface StoreSession {
  ws: Workspace;
  repo: string;
  branch: string;
  flags: string[];
}

/** A linked worktree on its own branch of a repository outside the root, or a plain repository on `work`. */
export async function storeSession(t: Teardown, r: SessionRoot, kind: GitKind, label: string): Promise<StoreSession> {
  if (kind === 'plain repository') {
    const ws = await addWorkspace(t, r, label, {}, async (wsPath) => {
      await seed(wsPath);
      await setupGit(wsPath, 'checkout', '-q', '-b', 'work');
    });
    return { ws, repo: ws.path, branch: 'work', flags: [] };
  }
  const repo = path.join(r.base, 'repos', label);
  await seed(repo);
  let branch = '';
  const ws = await addWorkspace(t, r, label, {}, async (wsPath) => {
    branch = `session-${path.basename(wsPath)}`;
    await setupGit(repo, 'worktree', 'add', '-q', '-b', branch, wsPath, 'main');
  });
  await chownAgent(repo);
  return { ws, repo, branch, flags: ['--git-root', path.join(r.base, 'repos')] };
}

const agentCommit = (file: string, message: string) =>
  `echo ${file} > ${file}.txt && git add ${file}.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "${message}"`;
const honest = `${agentCommit('honest', 'honest commit')}; echo "honest-commit=$?"`;
const objectFiles = (dir: string) => `$(find "${dir}" -type f ! -name alternates | wc -l)`;

/** The wipe as an attacker would make it: every object file, ref, packed-refs and log it sees, the alternates too. */
export const wipeLines = [
  `echo "store-objects-before=${objectFiles('$CD/objects')}"`,
  'find "$CD/objects" -type f -delete 2>/dev/null; echo "wipe-objects=$?"',
  'rm -rf "$CD/objects" 2>/dev/null; mv "$CD/objects/info" "$CD/info-moved" 2>/dev/null; mv "$CD/objects" "$CD/objects-moved" 2>/dev/null',
  `echo "store-objects-after=${objectFiles('$CD/objects')} alternates=$(cat "$CD/objects/info/alternates" 2>/dev/null)"`,
  'rm -rf "$CD/refs" "$CD/packed-refs" "$CD/logs"; echo "wipe-refs=$?"; echo "store-refs-after=$(find "$CD/refs" "$CD/packed-refs" "$CD/logs" 2>/dev/null | wc -l)"',
  'find /sandbox/git/live/objects -type f -delete 2>&1 | tail -1',
  'rm -rf /sandbox/git/live/refs 2>&1 | tail -1',
  'echo "live-objects-after=$(find /sandbox/git/live/objects -type f | wc -l)"',
];

/** Then the honest agent: its branch back at the tip it remembered (the start's, a host object), the index with it, and its commit. */
export const recoverLines = [
  'mkdir -p "$CD/refs/heads" "$CD/objects" && git update-ref "$BRANCH" "$TIP" && git reset -q; echo "recover=$?"',
  honest,
];

const attackLines: Record<StoreAttack, string[]> = {
  wipe: [`${agentCommit('early', 'early work')}; echo "early-commit=$?"`, ...wipeLines, ...recoverLines],
  flood: [
    honest,
    'git update-ref refs/heads/main HEAD; echo "move-main=$?"',
    'git update-ref refs/heads/other HEAD; echo "move-other=$?"',
    'git tag -f v1 HEAD >/dev/null; echo "move-tag=$?"',
    'git replace HEAD~1 HEAD; echo "replace=$?"',
    'git -c user.name=a -c user.email=a@example.invalid notes add -m planted HEAD; echo "note=$?"',
    'seq 1 100000 | sed "s|.*|create refs/flood/r& HEAD|" | git update-ref --stdin; echo "flood=$?"',
    'echo "refs-inside=$(git for-each-ref | wc -l)"',
    'git gc -q --prune=now; echo "gc=$?"',
    'git cat-file -e HEAD && echo "honest-survives-gc"',
  ],
};

/** The agent's program (it remembers where its git dir and its branch's tip are first), each step's status on stdout. */
export function storeAttackScript(ws: Workspace, attack: StoreAttack): string {
  const remember =
    'CD=$(cd "$(git rev-parse --git-common-dir)" && pwd); BRANCH=$(git symbolic-ref HEAD); TIP=$(git rev-parse HEAD); echo "common: $CD"';
  return ['#!/bin/sh', `cd ${ws.inside} || exit 90`, remember, ...attackLines[attack], 'exit 0', ''].join('\n');
}

export interface HostRepoState {
  /** Every ref but the session's branch: `<name> <object>` lines. */
  refs: string;
  branch: string;
}

export async function hostState(base: string, s: StoreSession): Promise<HostRepoState> {
  const out = await hostGit(base, s.repo, ['for-each-ref', '--format=%(refname) %(objectname)']);
  const refs = out.stdout
    .split('\n')
    .filter((l) => l && !l.startsWith(`refs/heads/${s.branch} `))
    .join('\n');
  return { refs, branch: (await hostGit(base, s.repo, ['rev-parse', s.branch])).stdout.trim() };
}

export interface StoreAttackOutcome {
  end: LaunchEnd;
  before: HostRepoState;
  after: HostRepoState;
  fsck: { exitCode: number; stderr: string };
  honestOnBranch: boolean;
  /** The branch's subjects here afterwards, newest first. */
  branchLog: string;
  line: Record<string, any> | undefined;
  lineBytes: number[];
}

/** One attacking session through the launcher, and what the host's git says afterwards. */
export async function storeAttack(
  t: Teardown,
  root: Promise<SessionRoot>,
  kind: GitKind,
  attack: StoreAttack,
): Promise<StoreAttackOutcome> {
  const r = await root;
  const s = await storeSession(t, r, kind, `${attack}-${kind === 'plain repository' ? 'plain' : 'linked'}`);
  await writeFile(path.join(s.ws.path, '.astest', 'attack.sh'), storeAttackScript(s.ws, attack), { mode: 0o755 });
  await chownAgent(s.ws.path);
  const before = await hostState(r.base, s);
  const end = await launch(r, s.ws, `${s.ws.inside}/.astest/attack.sh`, [], s.flags, 600_000).done;
  const after = await hostState(r.base, s);
  const fsck = await hostGit(r.base, s.repo, ['fsck', '--full', '--no-progress']);
  const log = await hostGit(r.base, s.repo, ['log', '--format=%s', s.branch]);
  const lines = ledgerLines(s.ws);
  const raw = readFileSync(s.ws.ledger, 'utf8').split('\n').filter(Boolean);
  return {
    end,
    before,
    after,
    fsck,
    honestOnBranch: /^honest commit$/m.test(log.stdout),
    branchLog: log.stdout,
    line: lines.at(-1),
    lineBytes: raw.map((l) => Buffer.byteLength(l)),
  };
}

/** The positive control: the same wipe against a plain read-write bind of a throwaway copy's objects. */
export async function wipeWithSharedObjects(
  t: Teardown,
  r: SessionRoot,
): Promise<{ run: { exitCode: number; stdout: string }; fsckBefore: number; fsck: number; mainAfter: number }> {
  const copy = path.join(r.base, 'control-copy');
  await seed(copy);
  await chownAgent(copy);
  const fsckBefore = (await hostGit(r.base, copy, ['fsck', '--full', '--no-progress'])).exitCode;
  const args = ['run', '--rm', '--name', containerName(t, 'store-control'), ...hardeningFlags, '--user', '1000:1000'];
  args.push(
    '-v',
    `${copy}/.git/objects:${copy}/.git/objects`,
    'localhost/agent-sandbox:latest',
    'sh',
    '-c',
    `find ${copy}/.git/objects -type f -delete; echo "wipe-objects=$?"`,
  );
  const out = await runPodman(args, { expect: 'any', timeoutMs: 120_000 });
  const fsck = (await hostGit(r.base, copy, ['fsck', '--full', '--no-progress'])).exitCode;
  const mainAfter = (await hostGit(r.base, copy, ['rev-parse', '--verify', '-q', 'main^{commit}'])).exitCode;
  return { run: { exitCode: out.exitCode, stdout: out.stdout }, fsckBefore, fsck, mainAfter };
}

export interface KilledCommitOutcome {
  committed: boolean;
  branchBeforeNextStart: string;
  nextStart: LaunchEnd;
  honestOnBranch: boolean;
  abandoned: Record<string, any> | undefined;
  storeLeft: boolean;
}

/** A commit, then kill -9 of the launcher (and of its sentinel too, when asked), then the next launcher start. */
export async function killAfterCommit(t: Teardown, r: SessionRoot, kind: GitKind, alsoSentinel: boolean): Promise<KilledCommitOutcome> {
  const s = await storeSession(t, r, kind, `killed-${alsoSentinel ? 'both' : 'launcher'}`);
  const agent = `${honest}; touch ${s.ws.inside}/.committed; trap "" TERM; while :; do sleep 1; done`;
  const run = launch(r, s.ws, '/bin/sh', ['-c', agent], s.flags);
  const committed = await waitFor(() => existsSync(path.join(s.ws.path, '.committed')), 90_000, 100);
  const sentinels = sentinelPids(s.ws, r.root);
  process.kill(run.pid!, 'SIGKILL');
  if (alsoSentinel) for (const pid of sentinels) process.kill(pid, 'SIGKILL');
  if (!alsoSentinel) await waitFor(() => ledgerLines(s.ws).length > 0, 30_000, 200);
  else await sleep(2000);
  const branchBeforeNextStart = (await hostGit(r.base, s.repo, ['rev-parse', s.branch])).stdout.trim();
  const nextStart = await launcherCommand(r, s.ws, 'plan', s.flags);
  await settledWithin(run.done, 30_000);
  const log = await hostGit(r.base, s.repo, ['log', '--format=%s', s.branch]);
  return {
    committed,
    branchBeforeNextStart,
    nextStart,
    honestOnBranch: /^honest commit$/m.test(log.stdout),
    abandoned: ledgerLines(s.ws).find((l) => l['reason'] === 'abandoned'),
    storeLeft: existsSync(path.join(r.root, 'git-stores', s.ws.id)),
  };
}
