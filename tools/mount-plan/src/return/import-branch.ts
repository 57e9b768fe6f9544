/**
 * The one way a session's work comes home into a host repository, for a local session (from
 * its store: finish-store.ts), on a dispatch node (the same, into the node's mirror) and on the
 * dispatching client (from the bundle the node returned: agent-sandbox's dispatch/carry-work.ts):
 *
 * 1. a fetch of exactly one ref from the source (a repository the launcher made, or a bundle)
 *    with full object checks (`transfer.fsckObjects`: index-pack --strict on every object, then
 *    git's connectivity check), into `refs/agent-sandbox/returned/<id>`;
 * 2. the branch advances only when that is a fast-forward of what it is here now (`advance`: a
 *    compare-and-swap update-ref by default; dispatch merges in the local worktree); otherwise
 *    the commits wait at the side ref and the result says why.
 *
 * Nothing else of the source reaches the repository: no other ref, no tag, no FETCH_HEAD, no
 * gc or commit-graph run by the fetch.
 */
import { lchownSync, lstatSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { runGit, type GitPlace, type GitResult } from '@agent-sandbox/shared/git-run';

/** Settings for a checked fetch: the file transport only, every object into one pack (index-pack --strict checks each), and nothing run afterwards. */
export const checkedFetchConfig = [
  'protocol.file.allow=always',
  'fetch.unpackLimit=1',
  'transfer.fsckObjects=true',
  'gc.auto=0',
  'maintenance.auto=false',
  'fetch.writeCommitGraph=false',
];

export type Advance = (from: string | null, to: string) => { ok: true } | { ok: false; why: string };

export interface ImportInput {
  /** The host repository (its git dir, or common dir for a linked worktree). */
  place: Pick<GitPlace, 'gitDir'> & Partial<GitPlace>;
  /** A repository directory or a bundle file. */
  source: string;
  /** The one ref taken from it, and the commit it must name. */
  ref: string;
  tip: string;
  /** The branch to advance here (refs/heads/...). */
  branch: string;
  /** The session's id: the side ref is refs/agent-sandbox/returned/<id>. */
  sessionId: string;
  /** The branch did not exist here when the session started (an unborn branch): creating it is a fast-forward. */
  unbornAtStart?: boolean;
  advance?: Advance;
}

export interface ImportResult {
  outcome: 'fast-forward' | 'unchanged' | 'side-ref';
  from: string | null;
  to: string;
  sideRef?: string;
  message?: string;
  /** The advance itself failed (a lock held on the branch, a full disk): a cause here, not a decision; the commits wait at the side ref. */
  advanceFailed?: string;
}

/**
 * Where commits that could not advance the branch wait. A workspace id may hold what a ref name
 * may not (`a..b`, a trailing `.` or `.lock`): those dots become `_`.
 */
export const sideRefOf = (sessionId: string) =>
  `refs/agent-sandbox/returned/${sessionId.replace(/\.(?=\.)/g, '_').replace(/\.lock$/i, '_lock').replace(/\.$/, '_')}`;

/** What git said went wrong: its last `error:` or `fatal:` line (a lock's advice follows it), else its last line. */
export function gitComplaint(out: GitResult): string {
  const lines = out.stderr.trim().split('\n').filter(Boolean);
  const said = [...lines].reverse().find((l) => /^(error|fatal): /.test(l)) ?? lines.at(-1) ?? `exit ${out.status}`;
  return `${said}${out.signal ? ` (git was killed by ${out.signal})` : ''}`;
}

/** The default advance: compare-and-swap of the branch from what it was to the new tip. */
function updateRef(place: ImportInput['place'], branch: string, sessionId: string): Advance {
  return (from, to) => {
    const out = runGit(place, ['update-ref', '-m', `agent-sandbox: session ${sessionId}`, branch, to, from ?? ''], { allowFail: true });
    return out.status === 0 ? { ok: true } : { ok: false, why: gitComplaint(out) };
  };
}

/** Throws 80 (bundle-invalid / fetch refused) when the source does not pass the checks. */
export function importBranch(input: ImportInput): ImportResult {
  const { place, branch } = input;
  const sideRef = sideRefOf(input.sessionId);
  // A session may have written gigabytes: the fetch is given half an hour, not git-run's two minutes.
  const fetch = runGit(place, ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', input.source, `+${input.ref}:${sideRef}`], { config: checkedFetchConfig, timeoutMs: 30 * 60_000, allowFail: true });
  if (fetch.status !== 0) throw new ToolError('usage', 'import-refused', `git fetch: ${gitComplaint(fetch)}`);
  const fetched = runGit(place, ['rev-parse', '--verify', `${sideRef}^{commit}`]).stdout.trim();
  if (fetched !== input.tip) {
    runGit(place, ['update-ref', '-d', sideRef], { allowFail: true });
    throw new ToolError('usage', 'import-refused', `${input.ref} in the source names ${fetched}, not ${input.tip}`);
  }
  const from = runGit(place, ['rev-parse', '--verify', '--quiet', `${branch}^{commit}`], { allowFail: true }).stdout.trim() || null;
  const keep = (why: string): ImportResult => ({ outcome: 'side-ref', from, to: fetched, sideRef, message: `${why}: the session's commits are at ${sideRef} (git merge ${sideRef})` });
  if (from === fetched) {
    runGit(place, ['update-ref', '-d', sideRef], { allowFail: true });
    return { outcome: 'unchanged', from, to: fetched };
  }
  if (from === null && !input.unbornAtStart) return keep(`${branch} no longer exists here`);
  if (from !== null && runGit(place, ['merge-base', '--is-ancestor', from, fetched], { allowFail: true }).status !== 0) {
    return keep(`${branch} was rewritten in the session or moved here meanwhile (not a fast-forward)`);
  }
  const advanced = (input.advance ?? updateRef(place, branch, input.sessionId))(from, fetched);
  if (!advanced.ok) return { ...keep(advanced.why), advanceFailed: advanced.why };
  runGit(place, ['update-ref', '-d', sideRef], { allowFail: true });
  return { outcome: 'fast-forward', from, to: fetched };
}

/**
 * What root's git just wrote into a repository someone else owns (the fetched pack, the
 * branch's ref and reflog, the side ref, a rewritten packed-refs) goes back to that owner, as
 * if they had run git; the walk touches only those paths, never the whole repository.
 */
export function restoreImportOwner(gitDir: string, refs: string[], euid = process.geteuid?.() ?? 0): void {
  const owner = statSync(gitDir);
  if (euid !== 0 || owner.uid === 0) return;
  const fix = (p: string) => {
    const info = lstatSync(p, { throwIfNoEntry: false });
    if (info && info.uid === 0) lchownSync(p, owner.uid, owner.gid);
  };
  fix(`${gitDir}/packed-refs`);
  fix(`${gitDir}/objects/pack`);
  for (const name of readdirSync(`${gitDir}/objects/pack`)) fix(`${gitDir}/objects/pack/${name}`);
  for (const ref of refs) {
    for (const top of ['', 'logs/']) {
      const parts = `${top}${ref}`.split('/');
      for (let i = 1; i <= parts.length; i += 1) fix(path.join(gitDir, ...parts.slice(0, i)));
    }
  }
}
