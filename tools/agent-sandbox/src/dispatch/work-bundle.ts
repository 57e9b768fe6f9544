/**
 * Git bundles as dispatch carries them, both ways: made from one branch, named by size and
 * sha256, and checked on arrival in a throwaway repository (every object indexed, the
 * history complete, exactly the one ref that was announced) before any repository that
 * matters is touched.
 */
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { ToolError } from '@agent-sandbox/shared';
import { checkedFetchConfig } from '@agent-sandbox/mount-plan';
import type { BundleFacts } from '@agent-sandbox/shared/schemas/workspace';
import { runGit, type GitPlace } from '@agent-sandbox/shared/git-run';

/** Settings for a fetch from a bundle file: mount-plan's checked fetch (every object into one pack, index-pack --strict on each, nothing run afterwards). */
export const bundleFetchConfig = checkedFetchConfig;

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * Makes a bundle of `ref` (and, when `base` is given, only what `base` lacks). Returns undefined
 * when there is nothing to send (the ref adds no commit to `base`).
 */
export async function makeBundle(
  place: Pick<GitPlace, 'gitDir'>,
  ref: string,
  file: string,
  base?: string,
): Promise<BundleFacts | undefined> {
  const began = performance.now();
  const tip = runGit(place, ['rev-parse', '--verify', `${ref}^{commit}`]).stdout.trim();
  if (base && runGit(place, ['rev-list', '--count', `${base}..${tip}`]).stdout.trim() === '0') return undefined;
  runGit(
    place,
    ['bundle', 'create', '--quiet', file, ref, ...(base ? [`^${base}`] : [])],
    {},
    { exit: 'internal', code: 'bundle-create-failed' },
  );
  return { bytes: statSync(file).size, sha256: await sha256File(file), tip, base: base ?? null, ms: Math.round(performance.now() - began) };
}

/** The refs a bundle names (git bundle list-heads), as [objectId, ref] pairs. */
function bundleHeads(place: Pick<GitPlace, 'gitDir'>, file: string): string[][] {
  return runGit(place, ['bundle', 'list-heads', file], {}, { code: 'bundle-invalid' })
    .stdout.split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '));
}

export interface BundleCheck {
  file: string;
  ref: string;
  tip: string;
  /** A repository holding the bundle's prerequisites (the base it builds on); none: the bundle must be whole history. */
  prerequisitesIn?: Pick<GitPlace, 'gitDir'>;
}

/**
 * Refuses (80) a bundle that is not a valid git bundle, names any ref but `ref` at `tip`, or
 * whose objects do not index and connect: all in a repository made and removed here (with the
 * prerequisites' repository as an alternate when the bundle builds on one), so a bad bundle
 * never reaches the repository it is meant for.
 */
export function checkBundle(check: BundleCheck, scratchParent: string): void {
  const scratch = mkdtempSync(path.join(scratchParent, '.check-'));
  try {
    const gitDir = path.join(scratch, 'check.git');
    runGit({}, ['init', '--quiet', '--bare', gitDir], {}, { exit: 'internal' });
    if (check.prerequisitesIn) {
      // Read-only: the alternate only lends its objects to the check.
      writeFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), `${path.join(check.prerequisitesIn.gitDir, 'objects')}\n`);
    }
    const place = { gitDir };
    const verify = runGit(place, ['bundle', 'verify', '--quiet', check.file], { allowFail: true });
    if (verify.status !== 0) {
      throw new ToolError(
        'usage',
        'bundle-invalid',
        `the bundle is not a valid git bundle: ${verify.stderr.trim().split('\n').pop() ?? `exit ${verify.status}`}`,
      );
    }
    const heads = bundleHeads(place, check.file);
    if (heads.length !== 1 || heads[0]![1] !== check.ref || heads[0]![0] !== check.tip) {
      throw new ToolError(
        'usage',
        'bundle-refs',
        `the bundle must hold exactly ${check.ref} at ${check.tip}; it holds ${heads.map((h) => h.join(' ')).join(', ') || 'no ref'}`,
      );
    }
    runGit(
      place,
      ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', check.file, `+${check.ref}:refs/check`],
      { config: bundleFetchConfig },
      { code: 'bundle-invalid' },
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Fetches a checked bundle's ref into `into` (a ref of `place`). */
export function fetchBundle(place: Pick<GitPlace, 'gitDir'>, file: string, ref: string, into: string): void {
  runGit(
    place,
    ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', file, `+${ref}:${into}`],
    { config: bundleFetchConfig },
    { exit: 'internal', code: 'bundle-fetch-failed' },
  );
}

/** The node's mirror name for a repository: its directory name and a hash of where it is (one mirror per client repository). */
export function mirrorNameOf(commonDir: string, repository: string): string {
  const base =
    path
      .basename(repository)
      .replace(/\.git$/, '')
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 40) || 'repo';
  return `${base}-${createHash('sha256').update(commonDir).digest('hex').slice(0, 12)}`;
}
