/**
 * Host side, optional: copies the checked bytes into a per-session staging dir,
 * owned by the container's user, so that user can read its read-only mount.
 *
 * Why: rootful podman with --user 1000:1000 and all caps dropped cannot read a
 * host file owned by root (or by any uid but 1000) with mode 0600 through a bind
 * mount: there is no CAP_DAC_OVERRIDE inside. The host file is never modified,
 * chmodded or chowned; the copy is, and the caller removes it with the session.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, rename, rm, unlink } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { randomBytes } from 'node:crypto';
import { ToolError } from '@agent-sandbox/shared/tool-error';
import type { CredStagePlanOutput, CredStageStageInput } from '@agent-sandbox/shared/schemas/cred-stage';
import { resolveCredential, type PlanDeps } from './plan.js';

/** The agent user in localhost/agent-sandbox (and the container's --user). */
export const agentUid = 1000;
export const agentGid = 1000;

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

/** mkdir that never accepts a symlink or a non-directory where the directory should be. */
async function ensurePrivateDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if (errno(err) === 'ENOENT') {
      await ensurePrivateDir(nodePath.dirname(dir));
      return ensurePrivateDir(dir);
    }
    if (errno(err) !== 'EEXIST') throw new ToolError('credential', 'stage-failed', `stage dir ${dir} cannot be created (${errno(err)})`);
  }
  const info = await lstat(dir);
  if (info.isSymbolicLink() || !info.isDirectory()) {
    throw new ToolError('credential', 'stage-unsafe', `stage dir ${dir} is a symlink or not a directory`);
  }
}

/** Writes bytes to `to` through a fresh file (O_EXCL: never a planted link), then renames it over. */
async function writeStaged(to: string, bytes: Buffer, uid: number, gid: number): Promise<void> {
  const temp = `${to}.tmp-${randomBytes(6).toString('hex')}`;
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o400);
  try {
    await handle.writeFile(bytes);
    await handle.chmod(0o400);
    try {
      await handle.chown(uid, gid);
    } catch (err) {
      throw new ToolError('credential', 'stage-chown-failed', `staged copy ${to} cannot be given to uid ${uid} (${errno(err)})`);
    }
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  await rename(temp, to);
}

/** Plans (every refusal applies), then makes the staged copy the mount points at. */
export async function stageCredentials(input: CredStageStageInput, deps: PlanDeps = {}): Promise<CredStagePlanOutput> {
  const { uid, gid, ...planInput } = input;
  const { plan, bytes } = await resolveCredential(planInput, deps);
  for (const step of plan.stage) {
    await ensurePrivateDir(input.stageDir);
    await ensurePrivateDir(nodePath.dirname(step.to));
    await writeStaged(step.to, bytes, uid ?? agentUid, gid ?? agentGid);
  }
  return { ...plan, staged: true };
}

/** Removes a runtime's staged copy (or every runtime's, without one); the caller owns stageDir. */
export async function unstageCredentials(stageDir: string, runtime?: string): Promise<void> {
  await rm(runtime ? nodePath.join(stageDir, runtime) : stageDir, { recursive: true, force: true });
}
