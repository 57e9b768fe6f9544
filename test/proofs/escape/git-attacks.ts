// Every way repository files make the host's git start a program, tried from inside a real
// session in a linked worktree and in a plain repository: one session per path (the paths
// mask each other: a hooksPath hides the hooks, a redirected git dir hides everything else).
// Each planted command touches a marker in a host directory no container sees; afterwards the
// host user (uid 1000, its own HOME, no system config) runs status, commit, checkout and merge
// in every worktree. A marker on the host names what ran there.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { agentUid, chownAgent, type SessionRoot, type Workspace } from './session-kit.js';

export type GitKind = 'linked worktree' | 'plain repository';
export type GitPath = 'hooks' | 'core.fsmonitor' | 'core.hooksPath' | 'include.path' | 'config.worktree' | 'commondir' | 'gitfile';

export const gitPaths: Array<{ path: GitPath; what: string }> = [
  { path: 'hooks', what: 'hooks written into the hooks directory' },
  { path: 'core.fsmonitor', what: 'a core.fsmonitor command in the repository config' },
  { path: 'core.hooksPath', what: 'core.hooksPath pointing at hooks in the workspace' },
  { path: 'include.path', what: 'include.path naming a config file in the workspace' },
  { path: 'config.worktree', what: 'extensions.worktreeConfig plus a config.worktree with core.fsmonitor' },
  { path: 'commondir', what: 'a commondir pointing at a git dir in the workspace' },
  { path: 'gitfile', what: 'the .git replaced by a gitfile naming a git dir in the workspace' },
];

export const gitPeers =
  'sandbox-runtime "blocks writes to .git/hooks/pre-commit", "blocks writes to .git/config"; codex linux-sandbox sandbox_blocks_metadata_writes_inside_writable_root';

const hooks = [
  'post-checkout',
  'pre-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-merge-commit',
  'post-merge',
  'reference-transaction',
  'post-index-change',
];
const ident = {
  GIT_AUTHOR_NAME: 'host user',
  GIT_AUTHOR_EMAIL: 'host@example.invalid',
  GIT_COMMITTER_NAME: 'host user',
  GIT_COMMITTER_EMAIL: 'host@example.invalid',
};

export interface GitSession {
  kind: GitKind;
  path: GitPath;
  ws: Workspace;
  /** The repository's main worktree (for a plain repository: the workspace itself). */
  repo: string;
  markers: string;
  /** Host worktrees the host user works in, each with the branch it merges. */
  worktrees: Array<{ dir: string; merge: string }>;
  sessionBranch: string;
  extraFlags: string[];
}

/** git as the host user: uid 1000, its own HOME, no system config, an identity. */
export async function hostGit(base: string, cwd: string, args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const out = await execa('setpriv', ['--reuid', String(agentUid), '--regid', String(agentUid), '--clear-groups', '--', 'git', ...args], {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: path.join(base, 'host-user-home'), GIT_CONFIG_NOSYSTEM: '1', LANG: 'C', ...ident },
    extendEnv: false,
    reject: false,
    timeout: 60_000,
  });
  return { exitCode: out.exitCode ?? -1, stdout: String(out.stdout), stderr: String(out.stderr) };
}

/** Root's git for the setup (the tree is handed to uid 1000 afterwards). */
async function setupGit(cwd: string, ...args: string[]): Promise<void> {
  await execa('git', args, {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', ...ident },
    extendEnv: false,
  });
}

/** main with one commit, and a host-side branch per name with a commit of its own to merge. */
async function seedRepo(dir: string, sideBranches: string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await setupGit(dir, 'init', '-q', '-b', 'main');
  await setupGit(dir, 'commit', '-q', '--allow-empty', '-m', 'initial');
  for (const branch of sideBranches) {
    await setupGit(dir, 'checkout', '-q', '-b', branch, 'main');
    await setupGit(dir, 'commit', '-q', '--allow-empty', '-m', `on ${branch}`);
  }
  await setupGit(dir, 'checkout', '-q', 'main');
}

/** The repository for one (kind, path) and where the workspace is; `makeWs` makes the Workspace. */
export async function prepareGitSession(
  r: SessionRoot,
  kind: GitKind,
  gitPath: GitPath,
  makeWs: (prepare: (wsPath: string) => Promise<void>) => Promise<Workspace>,
): Promise<GitSession> {
  const slug = `${kind === 'plain repository' ? 'plain' : 'linked'}-${gitPath.replace(/\W/g, '-')}`;
  const markers = path.join(r.base, 'markers', slug);
  await mkdir(markers, { recursive: true });
  await mkdir(path.join(r.base, 'host-user-home'), { recursive: true });
  await chownAgent(path.join(r.base, 'markers'), path.join(r.base, 'host-user-home'));
  if (kind === 'plain repository') {
    const ws = await makeWs((wsPath) => seedRepo(wsPath, ['host-side-ws']));
    return {
      kind,
      path: gitPath,
      ws,
      repo: ws.path,
      markers,
      worktrees: [{ dir: ws.path, merge: 'host-side-ws' }],
      sessionBranch: 'main',
      extraFlags: [],
    };
  }
  const repos = path.join(r.base, 'repos');
  const repo = path.join(repos, slug);
  await seedRepo(repo, ['host-side-main', 'host-side-ws']);
  let branch = '';
  const ws = await makeWs(async (wsPath) => {
    branch = `session-${path.basename(wsPath)}`;
    await setupGit(repo, 'worktree', 'add', '-q', '-b', branch, wsPath, 'main');
  });
  await chownAgent(repo);
  return {
    kind,
    path: gitPath,
    ws,
    repo,
    markers,
    worktrees: [
      { dir: repo, merge: 'host-side-main' },
      { dir: ws.path, merge: 'host-side-ws' },
    ],
    sessionBranch: branch,
    extraFlags: ['--git-root', repos],
  };
}

/** sh lines writing every hook into DIR (a variable name), each touching <markers>/<prefix><hook>. */
function writeHooks(dir: string, markers: string, prefix: string): string {
  return `mkdir -p "${dir}"; for h in ${hooks.join(' ')}; do printf '#!/bin/sh\\ntouch ${markers}/${prefix}%s\\n' "$h" > "${dir}/$h"; chmod +x "${dir}/$h"; done`;
}

/** A git dir of the agent's own in the workspace: a bare clone whose config and hooks run markers. */
function evilGitDir(dir: string, markers: string, tag: string): string[] {
  return [
    `git clone -q --bare "$CD" "${dir}"`,
    `git --git-dir="${dir}" config core.bare false`,
    `git --git-dir="${dir}" config core.fsmonitor "touch ${markers}/${tag}; false"`,
    writeHooks(`${dir}/hooks`, markers, `${tag}-hook-`),
  ];
}

/** Appends `[section] key = value` with git config, and by hand when git config is refused. */
function setConfig(file: string, key: string, value: string): string {
  const [section, name] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
  return `git config --file "${file}" ${key} "${value}" || printf '[%s]\\n\\t%s = %s\\n' ${section} ${name} "${value}" >> "${file}"`;
}

function plantLines(s: GitSession): string[] {
  const m = s.markers;
  switch (s.path) {
    case 'hooks':
      return [writeHooks('$CD/hooks', m, 'hook-')];
    case 'core.fsmonitor':
      return [setConfig('$CD/config', 'core.fsmonitor', `touch ${m}/fsmonitor; false`)];
    case 'core.hooksPath':
      return [writeHooks('$W/.evil-hooks', m, 'hookspath-'), setConfig('$CD/config', 'core.hooksPath', '$H/.evil-hooks')];
    case 'include.path':
      return [
        `printf '[core]\\n\\tfsmonitor = touch ${m}/include; false\\n' > "$W/.evil.inc"`,
        setConfig('$CD/config', 'include.path', '$H/.evil.inc'),
      ];
    case 'config.worktree':
      return [
        setConfig('$CD/config', 'core.repositoryformatversion', '1'),
        setConfig('$CD/config', 'extensions.worktreeConfig', 'true'),
        `printf '[core]\\n\\tfsmonitor = touch ${m}/config-worktree; false\\n' > "$GD/config.worktree"`,
      ];
    case 'commondir':
      return [...evilGitDir('$W/.evil-common', m, 'commondir'), `printf '%s\\n' "$H/.evil-common" > "$GD/commondir"`];
    case 'gitfile':
      return [
        ...evilGitDir('$W/.evil-gitdir', m, 'gitfile'),
        s.kind === 'plain repository' ? 'mv "$W/.git" "$W/.git.moved"' : ':',
        `printf 'gitdir: %s\\n' "$H/.evil-gitdir" > "$W/.git"`,
      ];
  }
}

/**
 * The agent's program: its own honest commit first, then the plant. The workspace's host path
 * comes from mountinfo, as an attacker would find it; the git dirs from git itself.
 */
export function plantScript(s: GitSession): string {
  return [
    '#!/bin/sh',
    `W=${s.ws.inside}; cd "$W" || exit 90`,
    `H=$(awk -v d="$W" '$5 == d {print $4}' /proc/self/mountinfo); echo "host path: $H"`,
    'echo agent > by-agent && git add by-agent && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "agent commit"; echo "agent-commit=$?"',
    'GD=$(git rev-parse --absolute-git-dir); CD=$(cd "$(git rev-parse --git-common-dir)" && pwd); echo "git dir: $GD common: $CD"',
    ...plantLines(s).map((line, i) => `( ${line} ) 2>&1; echo "plant ${s.path} step ${i} rc=$?"`),
    'exit 0',
    '',
  ].join('\n');
}

export interface HostGitOutcome {
  failures: string[];
  markers: string[];
  agentCommitOnBranch: boolean;
}

/** What the host user does in every worktree; then what ran, and whether the agent's commit is there. */
export async function hostEverydayGit(base: string, s: GitSession): Promise<HostGitOutcome> {
  const failures: string[] = [];
  for (const [i, { dir, merge }] of s.worktrees.entries()) {
    const steps = [
      ['status'],
      ['commit', '-q', '--allow-empty', '-m', 'host commit'],
      ['checkout', '-q', '-b', `host-probe-${i}`],
      ['checkout', '-q', '-'],
      ['merge', '-q', '--no-ff', '--no-edit', merge],
      ['status', '--porcelain'],
    ];
    for (const step of steps) {
      const out = await hostGit(base, dir, step);
      if (out.exitCode !== 0)
        failures.push(`git ${step.join(' ')} in ${dir}: exit ${out.exitCode}: ${out.stderr.trim().split('\n').pop()}`);
    }
  }
  const log = await hostGit(base, s.repo, ['log', '--format=%s', s.sessionBranch]);
  return {
    failures,
    markers: (await readdir(s.markers)).sort(),
    agentCommitOnBranch: log.exitCode === 0 && /^agent commit$/m.test(log.stdout),
  };
}
