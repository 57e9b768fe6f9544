/**
 * path-guard's core: is `path` the permitted `root` or below it, after every
 * symlink has been resolved? Refusals are ToolErrors with exit 86 (unsafe path).
 *
 * Decisions (README, "path-guard"):
 * - The root must be absolute. Its last component must not be a symlink: a root
 *   that can be swapped for a link would move the whole boundary. Symlinks in the
 *   root's ancestors (a distribution's /home -> /var/home) are accepted only when
 *   owned by root or by the caller, since only they could have planted them.
 * - A relative path is taken relative to the root.
 * - create: true makes missing directories one component at a time with mkdir
 *   (which never follows a symlink in the last component), then lstat-checks each.
 */
import * as nodeFs from 'node:fs/promises';
import * as nodePath from 'node:path';
import { ToolError, type CodeOf } from '@agent-sandbox/shared';
import type { PathGuardInput, PathGuardOutput } from '@agent-sandbox/shared/schemas/path-guard';

/** Linux PATH_MAX and NAME_MAX: longer input cannot name a real file. */
export const maxPathBytes = 4096;
export const maxNameBytes = 255;

/** The file-system calls the guard makes, passed in so tests can race them. */
export interface GuardFs {
  realpath(p: string): Promise<string>;
  lstat(p: string): Promise<{ isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean; uid: number }>;
  stat(p: string): Promise<{ isDirectory(): boolean; isFile(): boolean }>;
  mkdir(p: string, options: { mode: number }): Promise<unknown>;
}

export const realFs: GuardFs = {
  realpath: (p) => nodeFs.realpath(p),
  lstat: (p) => nodeFs.lstat(p),
  stat: (p) => nodeFs.stat(p),
  mkdir: (p, o) => nodeFs.mkdir(p, o),
};

export interface GuardOptions {
  fs?: GuardFs;
  /** Uid allowed to own symlinks above the root, besides 0. */
  uid?: number;
}

function refuse(code: CodeOf<'unsafePath'>, message: string, detail?: Record<string, unknown>): ToolError {
  return new ToolError('unsafePath', code, message, detail);
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** Empty, NUL, over-long: refused before any file-system call. */
export function checkPathText(value: string, field: 'path' | 'root'): void {
  if (value === '') throw refuse('empty-path', `${field}: empty string`);
  if (value.includes('\0')) throw refuse('nul-byte', `${field}: contains a NUL byte`);
  if (Buffer.byteLength(value) >= maxPathBytes) {
    throw refuse('path-too-long', `${field}: longer than ${maxPathBytes - 1} bytes`);
  }
  const longName = value.split('/').find((part) => Buffer.byteLength(part) > maxNameBytes);
  if (longName !== undefined) {
    throw refuse('path-too-long', `${field}: a component is longer than ${maxNameBytes} bytes`);
  }
}

export function isWithin(resolved: string, root: string): boolean {
  return resolved === root || resolved.startsWith(root === '/' ? '/' : `${root}/`);
}

/** The root's realpath, after the checks in the header comment. */
export async function resolveRoot(root: string, fs: GuardFs, uid: number): Promise<string> {
  checkPathText(root, 'root');
  if (!nodePath.isAbsolute(root)) throw refuse('relative-root', `root: must be absolute, got "${root}"`);
  const normal = nodePath.resolve(root);
  let last;
  try {
    last = await fs.lstat(normal);
  } catch (err) {
    throw refuse('root-not-found', `root: ${normal} does not exist (${errnoOf(err) ?? 'error'})`);
  }
  if (last.isSymbolicLink()) {
    throw refuse('root-is-symlink', `root: ${normal} is itself a symlink; name the directory it points to`);
  }
  // Walk the ancestors: a link above the root is fine only if root or the caller owns it.
  const parts = normal.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i += 1) {
    const ancestor = `/${parts.slice(0, i).join('/')}`;
    const info = await fs.lstat(ancestor);
    if (info.isSymbolicLink() && info.uid !== 0 && info.uid !== uid) {
      throw refuse('root-symlink-untrusted', `root: ancestor ${ancestor} is a symlink owned by uid ${info.uid}`);
    }
  }
  const real = await fs.realpath(normal);
  if (!(await fs.stat(real)).isDirectory()) throw refuse('root-not-directory', `root: ${normal} is not a directory`);
  return real;
}

async function checkKind(resolved: string, kind: PathGuardInput['kind'], fs: GuardFs, given: string): Promise<void> {
  if (kind === 'any') return;
  const info = await fs.stat(resolved);
  if (kind === 'file' && !info.isFile()) throw refuse('not-a-file', `path: ${given} is not a regular file`);
  if ((kind ?? 'directory') === 'directory' && !info.isDirectory()) {
    throw refuse('not-a-directory', `path: ${given} is not a directory`);
  }
}

/** Names the escape precisely: lexically inside but resolving outside means a symlink did it. */
function outsideError(given: string, lexical: string, resolved: string, root: string): ToolError {
  const viaLink = isWithin(lexical, root) || lexical.startsWith(`${root}/`);
  return viaLink
    ? refuse('symlink-escape', `path: ${given} resolves through a symlink to ${resolved}, outside root ${root}`)
    : refuse('outside-root', `path: ${given} resolves to ${resolved}, outside root ${root}`);
}

/** Creates the missing tail of `absolute` under an existing contained ancestor. */
async function createUnder(absolute: string, root: string, fs: GuardFs, given: string): Promise<string> {
  const parts = absolute.split('/').filter(Boolean);
  if (parts.includes('..') || parts.includes('.')) {
    throw refuse('dot-segment-in-create', `path: ${given} has "." or ".." segments; create needs a plain path`);
  }
  // Find the deepest existing ancestor; it must resolve inside the root.
  let existing = parts.length;
  let base = '';
  for (; existing > 0; existing -= 1) {
    try {
      base = await fs.realpath(`/${parts.slice(0, existing).join('/')}`);
      break;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
  }
  if (existing === 0) base = '/';
  if (!isWithin(base, root)) throw outsideError(given, absolute, base, root);
  let current = base;
  for (const part of parts.slice(existing)) {
    const next = current === '/' ? `/${part}` : `${current}/${part}`;
    try {
      await fs.mkdir(next, { mode: 0o755 });
    } catch (err) {
      // EEXIST: something appeared since the realpath above (maybe a planted link); lstat decides.
      if (errnoOf(err) !== 'EEXIST') throw refuse('create-failed', `path: cannot create ${next} (${errnoOf(err)})`);
    }
    const info = await fs.lstat(next);
    if (info.isSymbolicLink() || !info.isDirectory()) {
      throw refuse('create-race', `path: ${next} was replaced by a symlink or non-directory while creating it`);
    }
    if ((await fs.realpath(next)) !== next) {
      throw refuse('create-race', `path: ${next} does not resolve to itself after creating it`);
    }
    current = next;
  }
  return current;
}

/** The whole check. Returns the contract's output or throws a ToolError (86). */
export async function guardPath(input: PathGuardInput, options: GuardOptions = {}): Promise<PathGuardOutput> {
  const fs = options.fs ?? realFs;
  const uid = options.uid ?? process.getuid?.() ?? 0;
  checkPathText(input.path, 'path');
  const root = await resolveRoot(input.root, fs, uid);
  // Not path.resolve: it would fold "link/.." lexically; realpath must see the raw string.
  const absolute = nodePath.isAbsolute(input.path) ? input.path : `${root}/${input.path}`;
  const lexical = nodePath.resolve(absolute);

  let resolved: string;
  let created = false;
  try {
    resolved = await fs.realpath(absolute);
  } catch (err) {
    if (errnoOf(err) === 'ENOTDIR') throw refuse('not-a-directory', `path: a component of ${input.path} is not a directory`);
    if (errnoOf(err) === 'ELOOP') throw refuse('symlink-loop', `path: ${input.path} has a symlink loop`);
    if (errnoOf(err) !== 'ENOENT') throw err;
    if (!input.create) throw refuse('not-found', `path: ${input.path} does not exist`);
    if ((input.kind ?? 'directory') !== 'directory') {
      throw refuse('create-not-directory', 'path: create makes directories only; kind must be "directory"');
    }
    resolved = await createUnder(absolute, root, fs, input.path);
    created = true;
  }
  if (!isWithin(resolved, root)) throw outsideError(input.path, lexical, resolved, root);
  await checkKind(resolved, input.kind, fs, input.path);
  return { ok: true, path: input.path, resolved, root, created };
}
