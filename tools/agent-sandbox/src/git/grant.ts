/**
 * Root mode: the agent runs as uid 1000 with no capabilities, so a linked worktree made by root
 * must be given to it: its files and its registration (<common>/worktrees/<name>) are chowned to
 * 1000. Nothing of the common dir is: a session writes its git state into a store of its own
 * (mount-plan's git-store.ts, owned by 1000), and its branch comes home through the launcher's
 * checked import. Workspaces made before that got POSIX ACL entries for uid 1000 on the common
 * dir's objects, refs and logs (their records list `aclUids`); `workspace rm` still takes those
 * away. Rootless (keep-id) needs none of this: the agent is the user.
 */
import { existsSync, lchownSync, lstatSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ToolError } from '@agent-sandbox/shared';
import { agentGid, agentUid } from '@agent-sandbox/shared/container-layout';
import { systemPath } from '@agent-sandbox/shared/podman';

/** Gives a tree to the agent, never following a symbolic link (lchown; links are not descended). */
export function chownTree(dir: string, uid = agentUid, gid = agentGid): void {
  const info = lstatSync(dir);
  if (info.uid !== uid || info.gid !== gid) lchownSync(dir, uid, gid);
  if (!info.isDirectory()) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(child, uid, gid);
    else {
      const c = lstatSync(child);
      if (c.uid !== uid || c.gid !== gid) lchownSync(child, uid, gid);
    }
  }
}

/**
 * What root's git just wrote into a repository someone else owns (a new `worktrees/`, the
 * branch's ref and reflog, fetched packs) goes back to that owner, as if they had run git:
 * otherwise their own git could no longer write there. `skip` (the agent's registration) stays.
 */
export function restoreOwner(commonDir: string, skip: string[] = [], euid = process.geteuid?.() ?? 0): void {
  const owner = statSync(commonDir);
  if (euid !== 0 || owner.uid === 0) return;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const child = path.join(dir, entry.name);
      if (skip.includes(child)) continue;
      const info = lstatSync(child);
      if (info.uid === 0) lchownSync(child, owner.uid, owner.gid);
      if (entry.isDirectory()) walk(child);
    }
  };
  walk(commonDir);
}

function setfacl(args: string[]): void {
  const out = spawnSync('setfacl', args, { env: { PATH: systemPath }, encoding: 'utf8', timeout: 120_000 });
  if (out.error) {
    const missing = (out.error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new ToolError(
      'startFailed',
      missing ? 'no-setfacl' : 'setfacl-failed',
      missing
        ? 'setfacl is not installed: root mode grants the agent (uid 1000) its git metadata with POSIX ACLs; apt-get install acl (scripts/setup.sh does)'
        : `setfacl: ${out.error.message}`,
    );
  }
  if (out.status !== 0)
    throw new ToolError(
      'startFailed',
      'setfacl-failed',
      `setfacl ${args.slice(0, 3).join(' ')}: ${(out.stderr ?? '').trim().split('\n').pop()}`,
    );
}

/** The parts of a common dir the grants of earlier workspaces covered, as setfacl targets: [recursive paths, the objects dir itself]. */
function grantTargets(commonDir: string): { recursive: string[]; objects: string } {
  const objects = path.join(commonDir, 'objects');
  const children = existsSync(objects)
    ? readdirSync(objects)
        .filter((n) => n !== 'info')
        .map((n) => path.join(objects, n))
    : [];
  const recursive = [...children, path.join(commonDir, 'refs'), path.join(commonDir, 'logs')].filter((p) => existsSync(p));
  return { recursive, objects };
}

/** Takes the grants away again (the last workspace of that repository was removed). */
export function revokeCommonDir(commonDir: string, uids: number[]): void {
  if (uids.length === 0) return;
  const spec = uids.flatMap((u) => [`u:${u}`, `d:u:${u}`]).join(',');
  const { recursive, objects } = grantTargets(commonDir);
  setfacl(['-P', '-x', spec, '--', objects]);
  if (recursive.length > 0) setfacl(['-P', '-R', '-x', spec, '--', ...recursive]);
}

/** Root mode only: the worktree and its registration to the agent. Returns the uids granted by ACL: none now. */
export function grantWorkspace(
  input: { workTree: string; registration: string; commonDir: string },
  euid = process.geteuid?.() ?? 0,
): number[] {
  if (euid !== 0) return [];
  restoreOwner(input.commonDir, [input.registration], euid);
  chownTree(input.workTree);
  chownTree(input.registration);
  return [];
}
