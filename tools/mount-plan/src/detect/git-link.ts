/**
 * The gitfile parser: `.git` as a file holding `gitdir: <path>`, and the one-path
 * files beside it (`commondir`, a worktree's `gitdir` registration).
 *
 * Git itself is lenient (setup.c read_gitfile_gently: any number of trailing CR/LF
 * stripped, a NUL silently ends the path, spaces kept as part of it, a BOM fails).
 * We are strict on purpose: we accept exactly `gitdir: <path>` with at most one
 * trailing "\n", and refuse (87) every byte sequence git might read differently
 * from us. Stricter is safe: a refused session never starts; a misread one mounts
 * the wrong directory. test/detect/gitfile-differential.unit.test.ts checks this against git.
 */
import { open } from 'node:fs/promises';
import { ToolError, type CodeOf } from '@agent-sandbox/shared';

/** Git refuses gitfiles larger than this (setup.c: max_file_size = 1 << 20). */
export const maxGitfileBytes = 1 << 20;
/** PATH_MAX: a longer path cannot name a real directory. */
export const maxPathBytes = 4096;

export interface GitLink {
  /** The path exactly as written after "gitdir: ". */
  target: string;
  relative: boolean;
}

function refuse(code: CodeOf<'gitMount'>, message: string): ToolError {
  return new ToolError('gitMount', code, message);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * One path on one line: no NUL, CR, control characters, surrounding blanks or
 * second line; valid UTF-8. `what` names the file in messages.
 */
export function parsePathLine(bytes: Uint8Array, what: string): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw refuse('gitfile-bom', `${what}: starts with a byte-order mark; git would not read it as we do`);
  }
  if (bytes.includes(0)) throw refuse('gitfile-nul', `${what}: contains a NUL byte`);
  if (bytes.includes(0x0d)) throw refuse('gitfile-crlf', `${what}: contains a carriage return (CRLF line end?)`);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw refuse('gitfile-not-utf8', `${what}: is not valid UTF-8`);
  }
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (body.includes('\n')) throw refuse('gitfile-trailing-junk', `${what}: has more than one line`);
  if (body === '') throw refuse('gitfile-empty', `${what}: names no path`);
  if (/[\u0000-\u001f\u007f]/.test(body)) throw refuse('gitfile-control-char', `${what}: contains a control character`);
  if (/^\s|\s$/u.test(body)) throw refuse('gitfile-whitespace', `${what}: path starts or ends with white space`);
  if (Buffer.byteLength(body) >= maxPathBytes) throw refuse('gitfile-path-too-long', `${what}: path is ${maxPathBytes} bytes or longer`);
  return body;
}

/** Parses the bytes of a `.git` file. */
export function parseGitLink(bytes: Uint8Array, what = '.git file'): GitLink {
  if (bytes.length > maxGitfileBytes) throw refuse('gitfile-too-large', `${what}: larger than 1 MiB`);
  const prefix = Buffer.from('gitdir: ');
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw refuse('gitfile-bom', `${what}: starts with a byte-order mark; git does not accept it`);
  }
  if (!Buffer.from(bytes.subarray(0, prefix.length)).equals(prefix)) {
    throw refuse('gitfile-malformed', `${what}: does not start with "gitdir: "`);
  }
  const target = parsePathLine(bytes.subarray(prefix.length), what);
  return { target, relative: !target.startsWith('/') };
}

/** Reads at most limit+1 bytes, so a huge or growing file is never buffered whole. */
export async function readBounded(file: string, limit: number, what: string): Promise<Uint8Array> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw refuse('gitfile-unreadable', `${what}: cannot open ${file} (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refuse('gitfile-not-a-file', `${what}: ${file} is not a regular file`);
    if (info.size > limit) throw refuse('gitfile-too-large', `${what}: ${file} is larger than 1 MiB`);
    const buffer = Buffer.alloc(limit + 1);
    const { bytesRead } = await handle.read(buffer, 0, limit + 1, 0);
    if (bytesRead > limit) throw refuse('gitfile-too-large', `${what}: ${file} is larger than 1 MiB`);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Reads and parses a `.git` file. */
export async function readGitLink(file: string): Promise<GitLink> {
  return parseGitLink(await readBounded(file, maxGitfileBytes, `gitfile ${file}`), `gitfile ${file}`);
}

/** Reads a one-path file such as `commondir` or a worktree's `gitdir` registration. */
export async function readPathFile(file: string, what: string): Promise<string> {
  return parsePathLine(await readBounded(file, maxGitfileBytes, `${what} ${file}`), `${what} ${file}`);
}
