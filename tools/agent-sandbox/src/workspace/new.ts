/**
 * `agent-sandbox workspace new ID --repo DIR [--branch NAME] [--from REF]`: a linked worktree
 * of the repository at <root>/workspaces/<id> on its own branch (default agent/<id>, from the
 * repository's HEAD), given to the agent for the mode (git/grant.ts), checked with the same
 * mount plan a session uses, and recorded (record.ts) so sessions there need no
 * --git-root. The root is made when missing: this is how the first workspace comes to be.
 * Refused: an id in use (80), a busy id (92), a directory that is not a git repository (80).
 */
import { existsSync, lstatSync, mkdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { agentUid, containerWorkspace } from '@agent-sandbox/shared/container-layout';
import type { WorkspaceNewOutput } from '@agent-sandbox/shared/schemas/workspace';
import { guardPath } from '@agent-sandbox/path-guard';
import { detectGit, planMounts } from '@agent-sandbox/mount-plan';
import { grantWorkspace, revokeCommonDir } from '../git/grant.js';
import { gitLine, runGit } from '@agent-sandbox/shared/git-run';
import { absoluteRoot, checkWorkspaceId, layoutFor } from './layout.js';
import { lockWorkspace } from './lock.js';
import { listWorkspaceRecords, readWorkspaceRecord, writeWorkspaceRecord, type WorkspaceRecord } from './record.js';

export interface WorkspaceNewInput {
  id: string;
  repo: string;
  root: string;
  branch?: string;
  from?: string;
  /** True when --root was given: the suggested next command then names it too. */
  rootGiven?: boolean;
}

/** The root, made when missing (0755: the agent's mounts are below it), then held to path-guard's rules. */
export async function ensureRoot(root: string): Promise<string> {
  mkdirSync(path.join(absoluteRoot(root), 'workspaces'), { recursive: true, mode: 0o755 });
  return (await guardPath({ path: root, root, kind: 'directory' })).resolved;
}

/** The repository --repo names: its top level (or the bare repository) and its common dir, both realpaths. */
export function resolveRepository(repo: string): { repository: string; commonDir: string } {
  if (!path.isAbsolute(repo)) repo = path.resolve(repo);
  let dir: string;
  try {
    dir = realpathSync(repo);
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new ToolError(
      'usage',
      'bad-repo',
      `--repo: ${repo} is not a directory (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  // The user named this repository: trusted as that directory, whoever owns it (safe.directory for exactly it).
  const ask = (args: string[]) => {
    const out = runGit({ cwd: dir }, args, { config: [`safe.directory=${dir}`], allowFail: true });
    if (out.status === 0) return out.stdout.split('\n')[0]!.trim();
    const dubious = /dubious ownership/.test(out.stderr);
    throw new ToolError(
      'usage',
      'not-a-repository',
      dubious
        ? `--repo: git refuses ${dir}: it is owned by another user and is not the repository's top directory; name the top directory`
        : `--repo: ${dir} is not a git repository (${out.stderr.trim().split('\n').pop() ?? `git exit ${out.status}`})`,
    );
  };
  const commonDir = realpathSync(ask(['rev-parse', '--path-format=absolute', '--git-common-dir']));
  const bare = ask(['rev-parse', '--is-bare-repository']) === 'true';
  const repository = bare ? commonDir : realpathSync(ask(['rev-parse', '--show-toplevel']));
  return { repository, commonDir };
}

/** The branch the workspace checks out, and the commit it starts from. */
function chooseBranch(commonDir: string, input: WorkspaceNewInput): { ref: string; name: string; base: string; create: boolean } {
  const place = { gitDir: commonDir };
  const wanted = input.branch ?? `agent/${input.id}`;
  const name = gitLine(place, ['check-ref-format', '--branch', wanted], { exit: 'usage', code: 'bad-branch' });
  const ref = `refs/heads/${name}`;
  if (!/^refs\/heads\/[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/.test(ref)) {
    throw new ToolError(
      'usage',
      'bad-branch',
      `--branch: ${JSON.stringify(name)} must be [A-Za-z0-9._/-] and start with a letter or digit`,
    );
  }
  const existing = runGit(place, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { allowFail: true });
  if (existing.status === 0) {
    if (input.from)
      throw new ToolError(
        'usage',
        'branch-exists',
        `--branch: ${name} already exists in the repository; leave out --from to check it out, or name a new branch`,
      );
    return { ref, name, base: existing.stdout.trim(), create: false };
  }
  const from = input.from ?? 'HEAD';
  const base = gitLine(place, ['rev-parse', '--verify', '--end-of-options', `${from}^{commit}`], { exit: 'usage', code: 'bad-from' });
  return { ref, name, base, create: true };
}

function refuseInUse(root: string, id: string, workspace: string): void {
  if (readWorkspaceRecord(root, id))
    throw new ToolError(
      'usage',
      'workspace-exists',
      `workspace ${id} already exists (its record is ${path.join(root, 'workspace-records', `${id}.json`)}); pick another id, or \`agent-sandbox workspace rm ${id}\` first`,
    );
  let taken = false;
  try {
    lstatSync(workspace);
    taken = true;
  } catch {
    // free
  }
  if (taken)
    throw new ToolError('usage', 'workspace-exists', `workspace ${id} is in use: ${workspace} exists; pick another id, or remove it first`);
}

/** Undoes a half-made workspace: the worktree registration, the branch if it was made here, the directory. */
function rollBack(commonDir: string, workspace: string, branch: { ref: string; create: boolean }, aclUids: number[], root: string): void {
  runGit({ gitDir: commonDir }, ['worktree', 'remove', '--force', '--force', workspace], { allowFail: true });
  rmSync(workspace, { recursive: true, force: true });
  runGit({ gitDir: commonDir }, ['worktree', 'prune'], { allowFail: true });
  if (branch.create) runGit({ gitDir: commonDir }, ['update-ref', '-d', branch.ref], { allowFail: true });
  if (aclUids.length > 0 && !listWorkspaceRecords(root).some((r) => r.commonDir === commonDir)) {
    try {
      revokeCommonDir(commonDir, aclUids);
    } catch {
      // left granted: reported by nothing, harmless to the repository's owner
    }
  }
}

/** `git worktree add`: the new branch made from its base, or the existing branch checked out. */
function addWorktree(commonDir: string, workspace: string, branch: ReturnType<typeof chooseBranch>): void {
  const args = branch.create
    ? ['worktree', 'add', '--quiet', '-b', branch.name, workspace, branch.base]
    : ['worktree', 'add', '--quiet', workspace, branch.name];
  runGit({ gitDir: commonDir }, args, {}, { exit: 'usage', code: 'worktree-add-failed' });
}

/** What `workspace new` prints: the record's facts, and the command that starts a session in it (with --root when one was given). */
function newOutput(
  record: WorkspaceRecord,
  recordFile: string,
  workspace: string,
  euid: number,
  rootGiven: string | undefined,
): WorkspaceNewOutput {
  return {
    ok: true,
    id: record.id,
    workspace,
    repository: record.repository,
    commonDir: record.commonDir,
    branch: record.branch,
    base: record.base,
    owner: euid === 0 ? agentUid : euid,
    aclUids: record.aclUids,
    record: recordFile,
    next: `agent-sandbox run --runtime codex --workspace ${record.id}${rootGiven ? ` --root ${rootGiven}` : ''}`,
  };
}

export async function workspaceNew(input: WorkspaceNewInput, euid = process.geteuid?.() ?? 0): Promise<WorkspaceNewOutput> {
  const id = checkWorkspaceId(input.id);
  const root = await ensureRoot(input.root);
  const layout = layoutFor(root, id);
  const lock = lockWorkspace(layout.lockFile, layout.recordFile, id);
  try {
    refuseInUse(root, id, layout.workspace);
    const { repository, commonDir } = resolveRepository(input.repo);
    if (commonDir === root || commonDir.startsWith(`${root}/`)) {
      throw new ToolError(
        'gitMount',
        'repository-inside-root',
        `--repo: ${repository} has its git metadata inside the sandbox root ${root}; make workspaces from a repository outside it`,
      );
    }
    const branch = chooseBranch(commonDir, input);
    addWorktree(commonDir, layout.workspace, branch);
    let aclUids: number[] = [];
    const homeExisted = existsSync(layout.home);
    try {
      const git = await detectGit({ workspace: layout.workspace, containerWorkspace: containerWorkspace(id) });
      if (git.kind !== 'worktree' || !git.gitDir)
        throw new ToolError(
          'internal',
          'worktree-not-linked',
          `git worktree add made ${layout.workspace}, but it is not a linked worktree (${git.kind})`,
        );
      aclUids = grantWorkspace({ workTree: layout.workspace, registration: git.gitDir, commonDir }, euid);
      // The same mount plan a session composes: a workspace made here is one a session can use.
      await planMounts({ workspace: layout.workspace, root, sessionId: id, gitRoots: [root, commonDir] });
      const record: WorkspaceRecord = {
        version: 1,
        id,
        origin: 'local',
        repository,
        commonDir,
        branch: branch.ref,
        base: branch.base,
        createdAt: new Date().toISOString(),
        aclUids,
      };
      return newOutput(record, writeWorkspaceRecord(root, record), layout.workspace, euid, input.rootGiven ? root : undefined);
    } catch (err) {
      rollBack(commonDir, layout.workspace, branch, aclUids, root);
      if (!homeExisted) rmSync(layout.home, { recursive: true, force: true });
      throw err;
    }
  } finally {
    lock.release();
  }
}
