/**
 * Opens a host credential file safely and returns its bytes for the expiry check
 * (and for `stage` to copy: the bytes checked are the bytes copied). Refusals
 * (85) name the file and what is wrong with it, never anything it contains.
 */
import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import * as nodePath from 'node:path';
import { ToolError, type CodeOf } from '@agent-sandbox/shared/tool-error';

/** Credential files are a few KB; anything larger is not one. */
export const maxCredentialBytes = 1024 * 1024;

export interface CredentialFile {
  /** The path as resolved from the table or account (lexical, absolute). */
  path: string;
  /** Its realpath. */
  real: string;
  bytes: Buffer;
}

function refuse(code: CodeOf<'credential'>, message: string): ToolError {
  return new ToolError('credential', code, message);
}

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

export function isWithin(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer === '/' ? '/' : `${outer}/`);
}

/** `label` is e.g. "codex credential file"; `login` tells the user how to fix a missing file. */
export async function readCredentialFile(path: string, home: string, label: string, login: string): Promise<CredentialFile> {
  const name = `${label} ${path}`;
  try {
    await lstat(path);
  } catch (err) {
    if (errno(err) === 'ENOENT') throw refuse('not-found', `${name} does not exist; ${login} first`);
    throw refuse('unreadable', `${name} cannot be examined (${errno(err)})`);
  }
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    if (errno(err) === 'ENOENT') throw refuse('not-found', `${name} is a symlink to a missing file; ${login} first`);
    if (errno(err) === 'ELOOP') throw refuse('symlink-loop', `${name} is a symlink loop`);
    throw refuse('unreadable', `${name} cannot be resolved (${errno(err)})`);
  }
  if (real !== nodePath.resolve(path)) {
    // A symlink somewhere in the path: fine only when it lands inside the user's home.
    let realHome: string;
    try {
      realHome = await realpath(home);
    } catch {
      throw refuse('home-not-found', `home ${home} does not exist (needed to check ${name})`);
    }
    if (!isWithin(real, realHome)) {
      throw refuse('symlink-outside-home', `${name} resolves through a symlink to ${real}, outside the home ${realHome}`);
    }
  }
  let handle;
  try {
    handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    throw refuse('unreadable', `${name} cannot be opened (${errno(err)})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refuse('not-regular-file', `${name} is not a regular file`);
    const mode = info.mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw refuse('too-permissive', `${name} has mode 0${mode.toString(8)}: group or others have access; run chmod 600 on it`);
    }
    if (info.size > maxCredentialBytes) throw refuse('too-large', `${name} is larger than ${maxCredentialBytes} bytes`);
    const bytes = await handle.readFile();
    if (bytes.length > maxCredentialBytes) throw refuse('too-large', `${name} is larger than ${maxCredentialBytes} bytes`);
    return { path, real, bytes };
  } finally {
    await handle.close();
  }
}

/** The file's JSON object; the parser's own message is not used (it can quote the contents). */
export function parseCredential(bytes: Buffer, name: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw refuse('unparsable', `${name} is not valid JSON`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw refuse('unparsable', `${name} is not a JSON object`);
  }
  return doc as Record<string, unknown>;
}
