/**
 * Root mode: the agent runs as uid 1000 with no capabilities, so a linked worktree made by root
 * must be given to it. Its files and its registration (<common>/worktrees/<name>: HEAD, index)
 * are chowned to 1000; a commit also writes objects, the branch's ref and its reflog in the
 * shared common dir, which stays its owner's: there uid 1000 gets POSIX ACL entries (access and
 * default, so what root writes later stays writable) on `objects` (not `objects/info`, where an
 * `alternates` file would point git at other repositories), `refs` and `logs`. The repository's
 * `config` and `hooks` are not granted: code an agent wrote there would run on the host the
 * next time anyone runs git. Rootless (keep-id) needs none of this: the agent is the user.
 */
import { existsSync, lchownSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { childProcess } from '@agent-sandbox/shared/builtins';
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
  const out = childProcess().spawnSync('setfacl', args, { env: { PATH: systemPath }, encoding: 'utf8', timeout: 120_000 });
  if (out.error) {
    const missing = (out.error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new ToolError('startFailed', missing ? 'no-setfacl' : 'setfacl-failed', missing ? 'setfacl is not installed: root mode grants the agent (uid 1000) its git metadata with POSIX ACLs; apt-get install acl (scripts/setup.sh does)' : `setfacl: ${out.error.message}`);
  }
  if (out.status !== 0) throw new ToolError('startFailed', 'setfacl-failed', `setfacl ${args.slice(0, 3).join(' ')}: ${(out.stderr ?? '').trim().split('\n').pop()}`);
}

/** The parts of a common dir a commit writes, as setfacl targets: [recursive paths, the objects dir itself]. */
function grantTargets(commonDir: string): { recursive: string[]; objects: string } {
  const objects = path.join(commonDir, 'objects');
  const children = existsSync(objects) ? readdirSync(objects).filter((n) => n !== 'info').map((n) => path.join(objects, n)) : [];
  const recursive = [...children, path.join(commonDir, 'refs'), path.join(commonDir, 'logs')].filter((p) => existsSync(p));
  return { recursive, objects };
}

/** uid 1000 (and `also`: the repository's owner, so what root writes stays theirs to change) gets rwX on the metadata a commit writes. */
export function grantCommonDir(commonDir: string, also: number[] = []): number[] {
  const uids = [...new Set([agentUid, ...also.filter((u) => u !== 0)])];
  // A commit in a worktree writes its branch's reflog under logs/, which a bare repository (a
  // node's mirror) or one that never logged has not made yet; the agent could not make it there.
  const logs = path.join(commonDir, 'logs');
  if (!existsSync(logs)) {
    mkdirSync(logs, { mode: 0o755 });
    const owner = statSync(commonDir);
    lchownSync(logs, owner.uid, owner.gid);
  }
  const spec = uids.flatMap((u) => [`u:${u}:rwX`, `d:u:${u}:rwX`]).join(',');
  const { recursive, objects } = grantTargets(commonDir);
  setfacl(['-P', '-m', spec, '--', objects]);
  if (recursive.length > 0) setfacl(['-P', '-R', '-m', spec, '--', ...recursive]);
  return uids;
}

/** Takes the grants away again (the last workspace of that repository was removed). */
export function revokeCommonDir(commonDir: string, uids: number[]): void {
  if (uids.length === 0) return;
  const spec = uids.flatMap((u) => [`u:${u}`, `d:u:${u}`]).join(',');
  const { recursive, objects } = grantTargets(commonDir);
  setfacl(['-P', '-x', spec, '--', objects]);
  if (recursive.length > 0) setfacl(['-P', '-R', '-x', spec, '--', ...recursive]);
}

/** Root mode only: the worktree and its registration to the agent, the common dir's write paths by ACL. */
export function grantWorkspace(input: { workTree: string; registration: string; commonDir: string; ownerUid: number }, euid = process.geteuid?.() ?? 0): number[] {
  if (euid !== 0) return [];
  restoreOwner(input.commonDir, [input.registration], euid);
  chownTree(input.workTree);
  chownTree(input.registration);
  return grantCommonDir(input.commonDir, [input.ownerUid]);
}
