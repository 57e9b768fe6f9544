/**
 * Container side (run by the entrypoint as the agent user): copies each staged
 * file from /sandbox-secrets/<runtime>/<file> to $HOME/<the table's path>, mode
 * 0600, parents 0700. What to copy comes from the staged directory plus the same
 * credential table compiled into the bundle. Never follows a symlink at the
 * destination or in its parents; anything unexpected under /sandbox-secrets
 * fails closed (85). Never prints contents.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { randomBytes } from 'node:crypto';
import { ToolError, type CodeOf } from '@agent-sandbox/shared/tool-error';
import type { CredStageInstallOutput } from '@agent-sandbox/shared/schemas/cred-stage';
import { findRow, runtimeNames, secretsRoot, stagedName } from './credential-table.js';

export interface InstallOptions {
  /** Default /sandbox-secrets. */
  secretsDir?: string;
  /** The container's HOME (default $HOME). */
  home?: string;
  /** Runtimes that must be staged; a missing one fails closed. */
  require?: string[];
  env?: NodeJS.ProcessEnv;
}

function refuse(code: CodeOf<'credential'>, message: string): ToolError {
  return new ToolError('credential', code, message);
}

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

async function lstatOrNull(path: string) {
  try {
    return await lstat(path);
  } catch (err) {
    if (errno(err) === 'ENOENT') return null;
    throw refuse('install-failed', `${path} cannot be examined (${errno(err)})`);
  }
}

/** Each directory from home down to `dir`, made 0700 when missing; a symlink anywhere is refused. */
async function ensureParents(home: string, relativeDir: string): Promise<void> {
  let current = home;
  for (const part of relativeDir.split('/').filter(Boolean)) {
    current = nodePath.join(current, part);
    try {
      await mkdir(current, { mode: 0o700 });
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw refuse('install-failed', `cannot create ${current} (${errno(err)})`);
    }
    const info = await lstat(current);
    if (info.isSymbolicLink()) throw refuse('destination-symlink', `${current} is a symlink; refusing to install credentials through it`);
    if (!info.isDirectory()) throw refuse('destination-not-directory', `${current} is not a directory`);
  }
}

/** Reads a staged file without following a link, refusing anything but a regular file. */
async function readStaged(path: string): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw refuse('staged-unreadable', `staged file ${path} cannot be opened (${errno(err)})`);
  }
  try {
    if (!(await handle.stat()).isFile()) throw refuse('staged-not-regular-file', `staged file ${path} is not a regular file`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Writes a fresh 0600 file beside `to` (O_EXCL) and renames it over: a link at `to` is replaced, never followed. */
async function writeDestination(to: string, bytes: Buffer): Promise<void> {
  const existing = await lstatOrNull(to);
  if (existing?.isSymbolicLink()) throw refuse('destination-symlink', `${to} is a symlink; refusing to write credentials through it`);
  if (existing && !existing.isFile()) throw refuse('destination-not-file', `${to} exists and is not a regular file`);
  const temp = `${to}.cred-stage-${randomBytes(6).toString('hex')}`;
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.chmod(0o600);
  } catch (err) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw refuse('install-failed', `cannot write ${to} (${errno(err)})`);
  }
  await handle.close();
  await rename(temp, to);
}

/** The runtimes staged under secretsDir; anything that is not a known runtime's directory fails closed. */
async function stagedRuntimes(secretsDir: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = (await readdir(secretsDir)).sort();
  } catch (err) {
    if (errno(err) === 'ENOENT') return [];
    throw refuse('staged-unreadable', `${secretsDir} cannot be listed (${errno(err)})`);
  }
  for (const entry of entries) {
    const info = await lstat(nodePath.join(secretsDir, entry));
    if (!findRow(entry) || !info.isDirectory()) {
      throw refuse(
        'unknown-staged-entry',
        `${nodePath.join(secretsDir, entry)} is not a staged runtime directory (known: ${runtimeNames().join(', ')})`,
      );
    }
  }
  return entries;
}

export async function installCredentials(options: InstallOptions = {}): Promise<CredStageInstallOutput> {
  const env = options.env ?? process.env;
  const secretsDir = options.secretsDir ?? secretsRoot;
  const home = options.home ?? env['HOME'];
  if (!home || !nodePath.isAbsolute(home))
    throw refuse('no-home', `HOME must be an absolute path to install credentials, got "${home ?? ''}"`);
  const homeInfo = await lstatOrNull(home);
  if (!homeInfo?.isDirectory()) throw refuse('no-home', `HOME ${home} is not a directory`);

  const runtimes = await stagedRuntimes(secretsDir);
  for (const wanted of options.require ?? []) {
    if (!findRow(wanted)) throw new ToolError('usage', 'unknown-runtime', `--require: unknown runtime "${wanted}"`);
    if (!runtimes.includes(wanted)) throw refuse('staged-missing', `${nodePath.join(secretsDir, wanted)} was required but is not staged`);
  }
  const installed: CredStageInstallOutput['installed'] = [];
  for (const runtime of runtimes) {
    const row = findRow(runtime)!;
    const dir = nodePath.join(secretsDir, runtime);
    const from = nodePath.join(dir, stagedName(row));
    const extra = (await readdir(dir)).filter((name) => name !== stagedName(row));
    if (extra.length > 0)
      throw refuse('unexpected-staged-file', `${nodePath.join(dir, extra[0]!)} is not a file the ${runtime} row stages`);
    if (!(await lstatOrNull(from))) throw refuse('staged-missing', `staged file ${from} is missing`);
    const bytes = await readStaged(from);
    await ensureParents(home, nodePath.dirname(row.containerPath));
    const to = nodePath.join(home, row.containerPath);
    await writeDestination(to, bytes);
    installed.push({ runtime, from, to, mode: '0600' });
  }
  return { ok: true, installed };
}
