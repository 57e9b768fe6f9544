/**
 * Whose fault a failed import was. Only a failure that comes from the session's own content
 * lets the store go (its commits cannot come home anyway): its branch names objects its store
 * does not have (the session deleted them), or one of its objects fails git's object checks.
 * Anything else (a full disk, a lock held on the branch here, git killed or timed out, a
 * cause nobody foresaw) keeps the store for a retry: its commits exist nowhere else.
 *
 * The judge is two read-only checks on the reader (store-reader.ts: the session's object files
 * and, through alternates, the host's), so that what fails the import on the host's side
 * cannot fail them too: nothing is written but the reader's alternates file, which is removed.
 * A check that did not run to its end (a signal, git's own fatal error in fsck) says nothing,
 * and nothing said means "keep".
 *
 * Edges, on the side of keeping or of a store that was broken anyway: the object check covers
 * every object in the store, also ones the branch does not reach (git never writes an invalid
 * one; a session that planted one loses its store only when the import failed); a host
 * repository that itself lacks objects (corrupt, or shallow below the session's start) makes
 * the first check fail.
 */
import { rmSync } from 'node:fs';
import { runGit } from '@agent-sandbox/shared/git-run';

/** fsck's exit bits (builtin/fsck.c): an invalid object, a broken pack. Missing links (2) are the host's objects here. */
const objectErrors = 0o1 | 0o4;

/** Why the reader's content makes the import impossible, or undefined when it does not (or cannot be told). */
export function contentFault(reader: string, tip: string, startTip: string | null): string | undefined {
  const place = { gitDir: reader };
  const present = runGit(place, ['cat-file', '-e', tip], { allowFail: true });
  if (present.signal) return undefined;
  if (present.status === 1)
    return `its branch names ${tip}, an object its store does not have (the session removed it, or keeps it where the launcher reads nothing: an alternate or a directory outside its store)`;
  // Everything the branch reaches that the host did not have at the start must be readable.
  const walk = runGit(place, ['rev-list', '--objects', '--no-object-names', tip, ...(startTip ? ['--not', startTip] : [])], {
    allowFail: true,
    timeoutMs: 30 * 60_000,
  });
  if (walk.signal) return undefined;
  if (walk.status !== 0) return `its branch reaches objects its store does not have (${lastLine(walk.stderr)})`;
  // The session's own objects alone, with git's strict checks (what transfer.fsckObjects applies).
  rmSync(`${reader}/objects/info/alternates`, { force: true });
  const fsck = runGit(place, ['fsck', '--strict', '--no-dangling', '--no-reflogs', '--no-progress'], {
    allowFail: true,
    timeoutMs: 30 * 60_000,
  });
  if (fsck.signal || fsck.status >= 128 || (fsck.status & objectErrors) === 0) return undefined;
  return `an object in its store fails git's checks (${lastLine(
    fsck.stderr
      .split('\n')
      .filter((l) => !/^(broken link|missing|dangling|notice| +to )/.test(l))
      .join('\n'),
  )})`;
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter(Boolean).pop()?.slice(0, 300) ?? 'no message';
}
