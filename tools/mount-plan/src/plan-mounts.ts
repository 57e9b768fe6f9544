/**
 * mount-plan's core: a session in, the exact mount list out. Only the session's
 * workspace (pinned at <root>/workspaces/<id> -> /sandbox/workspaces/<id>), its own
 * home (<root>/homes/<id> -> /sandbox/home), the staged credentials (read-only,
 * below /sandbox-secrets) and the git metadata the workspace needs; never the
 * whole root, never another session's workspace or home. Every source passes
 * path-guard; sources in the plan are realpaths.
 */
import { readdir } from 'node:fs/promises';
import { guardPath } from '@agent-sandbox/path-guard';
import { ToolError, isToolError, type CodeOf } from '@agent-sandbox/shared';
import type { MountEntry, MountPlanInput, MountPlanOutput } from '@agent-sandbox/shared/schemas/mount-plan';
import {
  checkSamePathDestination,
  containerWorkspace,
  homeMount,
  isLexicallyCanonical,
  isWithin,
  secretsMount,
} from './detect/container-paths.js';
import { checkWritableConfig, findWritableConfig, gitEffectiveConfig, type ReadEffectiveConfig } from './detect/config-scan.js';
import { detectGit, type GitDetection, type ReadConfigValue } from './detect/detect-git.js';
import { gitConfigEnv, gitConfigFor } from './detect/git-config.js';
import { planGitStore, type PlannedStore } from './store/git-store.js';

export interface PlanOptions {
  readConfigValue?: ReadConfigValue;
  readEffectiveConfig?: ReadEffectiveConfig;
}

function unsafe(code: CodeOf<'unsafePath'>, message: string, detail?: Record<string, unknown>): ToolError {
  return new ToolError('unsafePath', code, message, detail);
}

/** The workspace: contained in the root and exactly <root>/workspaces/<id> after realpath. */
async function pinWorkspace(input: MountPlanInput): Promise<{ workspace: string; root: string }> {
  const guarded = await guardPath({ path: input.workspace, root: input.root });
  const pinned = `${guarded.root}/workspaces/${input.sessionId}`;
  if (guarded.resolved !== pinned) {
    throw unsafe(
      'workspace-not-pinned',
      `workspace: ${input.workspace} resolves to ${guarded.resolved}; a session's workspace must be ${pinned} (mounted at ${containerWorkspace(input.sessionId)})`,
      { resolved: guarded.resolved, pinned },
    );
  }
  return { workspace: guarded.resolved, root: guarded.root };
}

/** The session's own home, created when missing, exactly <root>/homes/<id>. */
async function pinHome(root: string, sessionId: string): Promise<string> {
  const pinned = `${root}/homes/${sessionId}`;
  const guarded = await guardPath({ path: pinned, root, create: true });
  if (guarded.resolved !== pinned) {
    throw unsafe('home-not-pinned', `home: ${pinned} resolves to ${guarded.resolved}; it must be that directory itself`);
  }
  return guarded.resolved;
}

/** Passes when path-guard accepts `path` under at least one of `roots`; else rethrows its first refusal. */
async function guardUnderAny(path: string, roots: string[], kind: 'directory' | 'file'): Promise<string> {
  let first: unknown;
  for (const root of roots) {
    try {
      return (await guardPath({ path, root, kind })).resolved;
    } catch (err) {
      if (!isToolError(err)) throw err;
      first ??= err;
    }
  }
  throw first;
}

/** Git metadata mounted at the same path: under a git root, no reserved path, no other session's files. */
async function checkGitMounts(git: GitDetection, planned: PlannedStore, root: string, gitRoots: string[]): Promise<void> {
  for (const path of planned.samePath) {
    try {
      const resolved = await guardUnderAny(path, gitRoots, 'directory');
      if (resolved !== path) throw new Error(`${path} resolved to ${resolved}`);
    } catch (err) {
      throw new ToolError(
        'gitMount',
        'git-outside-permitted-root',
        `git metadata ${path} is not under a permitted git root (${gitRoots.join(', ')}): ${err instanceof Error ? err.message : err}`,
        { path },
      );
    }
    if (isWithin(root, path)) {
      throw new ToolError('gitMount', 'git-metadata-contains-root', `git metadata ${path} contains the sandbox root ${root}`);
    }
    for (const area of [`${root}/workspaces`, `${root}/homes`, `${root}/git-stores`]) {
      if (isWithin(path, area)) {
        throw new ToolError(
          'gitMount',
          'git-metadata-in-other-session',
          `git metadata ${path} lies in ${area}, in another session's directory; mounting it would expose that session`,
        );
      }
    }
    checkSamePathDestination(path, 'git metadata');
  }
  if (git.hostPathAlias) checkSamePathDestination(git.hostPathAlias, 'the workspace host path');
}

/** Host configuration naming a file the session can write: refused unless the input allows it. */
async function scanConfig(git: GitDetection, input: MountPlanInput, workspace: string, home: string, read: ReadEffectiveConfig) {
  if (git.kind === 'none' || !git.gitDir) return [];
  const writable = [workspace, home, ...(git.kind === 'worktree' ? [git.gitDir] : [])];
  const found = findWritableConfig(await read(git.gitDir), { worktree: workspace, writable, home: process.env['HOME'] });
  return checkWritableConfig(found, input.allowWorkspaceGitConfig === true);
}

async function credentialMounts(input: MountPlanInput): Promise<MountEntry[]> {
  const out: MountEntry[] = [];
  for (const [i, cred] of (input.credentials ?? []).entries()) {
    const field = `credentials[${i}]`;
    if (!isLexicallyCanonical(cred.destination) || !isWithin(cred.destination, secretsMount) || cred.destination === secretsMount) {
      throw unsafe('credential-destination', `${field}.destination: ${cred.destination} is not a plain path below ${secretsMount}/`);
    }
    const roots = input.credentialRoots ?? [cred.source.slice(0, cred.source.lastIndexOf('/')) || '/'];
    const source = await guardUnderAny(cred.source, roots, 'file');
    out.push({ source, destination: cred.destination, readOnly: true });
  }
  return out;
}

function depth(p: string): number {
  return p.split('/').filter(Boolean).length;
}

/** Parents before children (stable), and every destination exactly once. */
export function orderMounts(mounts: MountEntry[]): MountEntry[] {
  const seen = new Set<string>();
  for (const m of mounts) {
    if (seen.has(m.destination)) throw unsafe('duplicate-destination', `two mounts at ${m.destination}`);
    seen.add(m.destination);
  }
  return mounts
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.destination) - depth(b.m.destination) || a.i - b.i)
    .map(({ m }) => m);
}

/** The names at the top of a git dir the store covers. */
async function topNames(dir: string | undefined): Promise<Set<string>> {
  if (!dir) return new Set();
  return new Set(await readdir(dir).catch(() => []));
}

/** The whole plan. Throws ToolError: 86 for path escapes, 87 for git metadata, 80 never (the schema did that). */
export async function planMounts(input: MountPlanInput, options: PlanOptions = {}): Promise<MountPlanOutput> {
  const { workspace, root } = await pinWorkspace(input);
  const workdir = containerWorkspace(input.sessionId);
  const git = await detectGit({
    workspace,
    containerWorkspace: workdir,
    ...(options.readConfigValue ? { readConfigValue: options.readConfigValue } : {}),
  });
  const present = await topNames(git.kind === 'worktree' ? git.commonDir : git.gitDir);
  const ownPresent = await topNames(git.kind === 'worktree' ? git.gitDir : undefined);
  const planned = planGitStore({ git, workspace, root, sessionId: input.sessionId, workdir, present, ownPresent });
  await checkGitMounts(git, planned, root, input.gitRoots ?? [root]);
  const home = await pinHome(root, input.sessionId);
  const writableConfig = await scanConfig(git, input, workspace, home, options.readEffectiveConfig ?? gitEffectiveConfig);
  const mounts: MountEntry[] = [
    { source: workspace, destination: workdir, readOnly: false },
    { source: home, destination: homeMount, readOnly: false },
  ];
  if (git.hostPathAlias && git.hostPathAlias !== workdir) {
    mounts.push({ source: workspace, destination: git.hostPathAlias, readOnly: false });
  }
  mounts.push(...planned.mounts);
  mounts.push(...(await credentialMounts(input)));
  const gitConfig = gitConfigFor(git, workdir);
  return {
    ok: true,
    mounts: orderMounts(mounts),
    workdir,
    home,
    git: {
      kind: git.kind,
      ...(git.gitDir ? { gitDir: git.gitDir } : {}),
      ...(git.commonDir ? { commonDir: git.commonDir } : {}),
      ...(git.worktreeName ? { worktreeName: git.worktreeName } : {}),
      ...(git.hostPathAlias ? { hostPathAlias: git.hostPathAlias } : {}),
      ...(writableConfig.length > 0 ? { writableConfig } : {}),
    },
    gitConfig,
    ...(planned.store ? { gitStore: planned.store } : {}),
    env: gitConfigEnv(gitConfig),
  };
}
