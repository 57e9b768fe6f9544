// The control for the pinned alternates: the wipe session's own program (an early commit, the
// wipe, then the honest recovery and commit) in a plain podman run against a store made by hand
// the way prepareGitStore makes one (its own objects/ with info/alternates naming the read-only
// live objects, its refs, a snapshot of the host's as packed-refs, a copy of the index), over a
// throwaway copy of a repository, twice: once with the three mounts mount-plan pins
// (objects/, objects/info/, the alternates file read-only) and once without. Without them the
// wipe takes the alternates with it, the store no longer sees the host's objects, and the
// honest recovery and commit fail: so the launcher's wipe session, whose commit arrives, shows
// the pin at work.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { containerName, hardeningFlags, type Teardown } from '@agent-sandbox/testkit';
import { hostGit } from './git-attacks.js';
import { recoverLines, seed, wipeLines } from './git-store-attacks.js';
import { chownAgent, type SessionRoot } from './session-kit.js';

/** A store for the copy's main, as prepareGitStore lays one out (no links: git here needs none). */
async function handMadeStore(base: string, copy: string, store: string): Promise<void> {
  await mkdir(path.join(store, 'objects', 'info'), { recursive: true });
  await mkdir(path.join(store, 'objects', 'pack'));
  await mkdir(path.join(store, 'refs', 'heads'), { recursive: true });
  await writeFile(path.join(store, 'objects', 'info', 'alternates'), '/sandbox/git/live/objects\n');
  await writeFile(path.join(store, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(
    path.join(store, 'packed-refs'),
    `${(await hostGit(base, copy, ['for-each-ref', '--format=%(objectname) %(refname)'])).stdout}\n`,
  );
  await copyFile(path.join(copy, '.git', 'index'), path.join(store, 'index'));
}

async function wipeInStore(
  t: Teardown,
  r: SessionRoot,
  label: string,
  pinned: boolean,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const copy = path.join(r.base, `control-${label}`);
  const store = `${copy}-store`;
  await seed(copy);
  await chownAgent(copy);
  await handMadeStore(r.base, copy, store);
  await chownAgent(store);
  const pins = pinned
    ? [
        '-v',
        `${store}/objects:/g/objects`,
        '-v',
        `${store}/objects/info:/g/objects/info`,
        '-v',
        `${store}/objects/info/alternates:/g/objects/info/alternates:ro`,
      ]
    : [];
  const script = [
    'CD=/g; BRANCH=$(git symbolic-ref HEAD); TIP=$(git rev-parse HEAD)',
    'echo early > early.txt && git add early.txt && git -c user.name=a -c user.email=a@example.invalid commit -q -m early; echo "early-commit=$?"',
    ...wipeLines,
    ...recoverLines,
  ].join('\n');
  const args = ['run', '--rm', '--name', containerName(t, `store-${label}`), ...hardeningFlags, '--user', '1000:1000'];
  args.push(
    '-v',
    `${copy}/.git:/sandbox/git/live:ro`,
    '-v',
    `${store}:/g`,
    ...pins,
    '-v',
    `${copy}:/w`,
    '-e',
    'GIT_DIR=/g',
    '-e',
    'GIT_WORK_TREE=/w',
    '-w',
    '/w',
  );
  args.push('localhost/agent-sandbox:latest', 'sh', '-c', script);
  const out = await runPodman(args, { expect: 'any', timeoutMs: 120_000 });
  return { exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr };
}

/** The same wipe, then the honest recovery and commit, with and without the pinned alternates. */
export async function wipeWithAndWithoutPin(t: Teardown, r: SessionRoot) {
  return { pinned: await wipeInStore(t, r, 'pinned', true), unpinned: await wipeInStore(t, r, 'unpinned', false) };
}
