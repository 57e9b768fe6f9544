/**
 * The one way a session's work comes home into a host repository, for a local session (from
 * its store: finish-store.ts), on a dispatch node (the same, into the node's mirror) and on the
 * dispatching client (from the bundle the node returned: agent-sandbox's dispatch/carry-work.ts):
 *
 * 1. a fetch of exactly one ref from the source (a repository the launcher made, or a bundle)
 *    with full object checks (`transfer.fsckObjects`: index-pack --strict on every object, then
 *    git's connectivity check), into a quarantine repository: the objects move into the host's
 *    only when every check passed (fetchIntoQuarantine);
 * 2. the branch advances only when that is a fast-forward of what it is here now (`advance`: a
 *    compare-and-swap update-ref by default; dispatch merges in the local worktree); otherwise
 *    the commits wait at a ref of their own, `refs/agent-sandbox/returned/<id>` or, when an
 *    earlier session's commits wait there, `<id>+2`, `<id>+3`...: no session overwrites or deletes
 *    what another left waiting, and the result names the ref.
 *
 * Nothing else of the source reaches the repository: no other ref, no tag, no FETCH_HEAD, no
 * gc or commit-graph run by the fetch, and from a refused source not one object.
 */
import { lchownSync, lstatSync, mkdtempSync, readdirSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ToolError } from '@agent-sandbox/shared';
import { removeTree } from '@agent-sandbox/shared/beneath';
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
  /**
   * The waiting ref an earlier attempt of this same import parked these commits at (a kept
   * store's kept.json): the only ref an import ever removes, and only once the branch holds them.
   */
  parked?: string;
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
  `refs/agent-sandbox/returned/${sessionId
    .replace(/\.(?=\.)/g, '_')
    .replace(/\.lock$/i, '_lock')
    .replace(/\.$/, '_')}`;

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

/**
 * A waiting ref no earlier session holds: refs/agent-sandbox/returned/<id>, else <id>+2, <id>+3...
 * Created with update-ref's "must not exist" (an empty old value), so a ref taken meanwhile is
 * never overwritten: the next name is tried.
 */
function parkCommits(place: ImportInput['place'], sessionId: string, tip: string): string {
  const base = sideRefOf(sessionId);
  const taken = takenRefs(place, base);
  // A retry of the same store parks the same commits: the ref its earlier attempt made serves.
  const already = [...taken].find(([, oid]) => oid === tip)?.[0];
  if (already) return already;
  // Names taken are skipped without a try; a name that fails anyway (a lock another git holds, a
  // ref made meanwhile) costs one try, and a cause that fails every name ends after a few.
  let tries = 0;
  for (let n = 1; tries < maxParkTries; n += 1) {
    const ref = n === 1 ? base : `${base}+${n}`;
    if (taken.has(ref)) continue;
    tries += 1;
    const made = runGit(place, ['update-ref', '-m', `agent-sandbox: session ${sessionId} waits`, ref, tip, ''], { allowFail: true });
    if (made.status === 0) return ref;
  }
  throw new ToolError('usage', 'import-refused', `no waiting ref under ${base} could be made (${maxParkTries} names tried)`);
}

/** How many free names parkCommits tries before it gives up. */
const maxParkTries = 20;

/** The waiting refs of this session's name (`base`, `base+N`), with the commit each names. */
function takenRefs(place: ImportInput['place'], base: string): Map<string, string> {
  const out = runGit(place, ['for-each-ref', '--format=%(refname) %(objectname)', `${base.slice(0, base.lastIndexOf('/'))}/`], {
    allowFail: true,
  }).stdout;
  const ours = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\+\\d+)?$`);
  return new Map(
    out
      .split('\n')
      .map((l) => l.split(' ') as [string, string])
      .filter(([ref, oid]) => ref && oid && ours.test(ref)),
  );
}

/** Every waiting ref of this id (`<id>`, `<id>+N`), in the order they were numbered: what `workspace list` shows. */
export function waitingRefs(place: ImportInput['place'], sessionId: string): string[] {
  const base = sideRefOf(sessionId);
  const number = (ref: string) => (ref === base ? 1 : Number(ref.slice(base.length + 1)));
  return [...takenRefs(place, base).keys()].sort((a, b) => number(a) - number(b));
}

/**
 * Once the branch holds `tip`, the ref an earlier attempt of this same import parked it at is
 * not needed: removed, only if it still names `tip`. Never a ref found by name or value alone:
 * another session's commits may wait at a ref of this id that names the same commit.
 */
function unpark(place: ImportInput['place'], parked: string | undefined, tip: string): void {
  if (parked && parked.startsWith('refs/agent-sandbox/returned/')) runGit(place, ['update-ref', '-d', parked, tip], { allowFail: true });
}

/**
 * The source's objects, fetched and checked outside the host repository: into a bare repository
 * of its own inside the host's git dir (same filesystem), whose alternates name the host's
 * objects so only what is new crosses. Every check runs there; only when all passed do its packs
 * move into the host's objects (a rename; the index last, so a reader never sees half a pack).
 * A refused source leaves nothing in the host repository: the quarantine is removed whole.
 */
function fetchIntoQuarantine(input: ImportInput): string {
  const gitDir = input.place.gitDir;
  const hostObjects = realpathSync(path.join(gitDir, 'objects'));
  const quarantine = mkdtempSync(path.join(gitDir, 'agent-sandbox-import-'));
  try {
    runGit({ gitDir: quarantine }, ['init', '--quiet', '--bare', quarantine]);
    writeFileSync(path.join(quarantine, 'objects', 'info', 'alternates'), `${hostObjects}\n`);
    // A session may have written gigabytes: the fetch is given half an hour, not git-run's two minutes.
    const fetch = runGit(
      { gitDir: quarantine },
      ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', input.source, `+${input.ref}:refs/import`],
      { config: checkedFetchConfig, timeoutMs: 30 * 60_000, allowFail: true },
    );
    if (fetch.status !== 0) throw new ToolError('usage', 'import-refused', `git fetch: ${gitComplaint(fetch)}`);
    const fetched = runGit({ gitDir: quarantine }, ['rev-parse', '--verify', 'refs/import^{commit}']).stdout.trim();
    if (fetched !== input.tip)
      throw new ToolError('usage', 'import-refused', `${input.ref} in the source names ${fetched}, not ${input.tip}`);
    movePacks(path.join(quarantine, 'objects', 'pack'), path.join(hostObjects, 'pack'));
    return fetched;
  } finally {
    removeTree(quarantine);
  }
}

/** Moves every pack of `from` into `to`: data and reverse index first, the .idx (what makes a pack visible to git) last. */
function movePacks(from: string, to: string): void {
  const names = readdirSync(from).filter((n) => /^pack-[0-9a-f]+\.(pack|rev|idx)$/.test(n));
  const order = (n: string) => (n.endsWith('.idx') ? 1 : 0);
  for (const name of names.sort((a, b) => order(a) - order(b))) renameSync(path.join(from, name), path.join(to, name));
}

/** Throws 80 (bundle-invalid / fetch refused) when the source does not pass the checks. */
export function importBranch(input: ImportInput): ImportResult {
  const { place, branch } = input;
  const fetched = fetchIntoQuarantine(input);
  const from = runGit(place, ['rev-parse', '--verify', '--quiet', `${branch}^{commit}`], { allowFail: true }).stdout.trim() || null;
  const keep = (why: string): ImportResult => {
    const sideRef = parkCommits(place, input.sessionId, fetched);
    return {
      outcome: 'side-ref',
      from,
      to: fetched,
      sideRef,
      message: `${why}: the session's commits are at ${sideRef} (git merge ${sideRef})`,
    };
  };
  if (from === fetched) {
    unpark(place, input.parked, fetched);
    return { outcome: 'unchanged', from, to: fetched };
  }
  if (from === null && !input.unbornAtStart) return keep(`${branch} no longer exists here`);
  if (from !== null && runGit(place, ['merge-base', '--is-ancestor', from, fetched], { allowFail: true }).status !== 0) {
    return keep(`${branch} was rewritten in the session or moved here meanwhile (not a fast-forward)`);
  }
  const advanced = (input.advance ?? updateRef(place, branch, input.sessionId))(from, fetched);
  if (!advanced.ok) return { ...keep(advanced.why), advanceFailed: advanced.why };
  unpark(place, input.parked, fetched);
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
