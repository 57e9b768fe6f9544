/**
 * What a test needs of the machine, turned into tap's skip option with the reason: a test that
 * cannot run here is reported as a skip naming what is missing, never as a pass, and a whole
 * file's tests each carry it (a top-level `t.skip()` does not stop a file). Only what the
 * machine really lacks is a skip: podman that fails or hangs while asked is an error thrown
 * here (the file fails), never "the image is missing". CI lists every skip and fails on one
 * its machine should not have (scripts/skips.mjs).
 *
 *   t.test('claim', needs({ root: true, podman: true, images: [sessionImage] }), async (t) => ...)
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { cgroupMode, podmanGlobalArgs } from '@agent-sandbox/shared';
import { podmanBinary, podmanEnv } from '@agent-sandbox/shared/podman';
import { imageBuildScript } from './podman-names.js';

export interface Requirements {
  root?: boolean;
  /** v1 also means hybrid (the v1 controllers are in use). */
  cgroup?: 'v1' | 'v2';
  podman?: boolean;
  images?: string[];
  /** Programs that must be on PATH. */
  commands?: string[];
  arch?: string;
  /** A systemd user manager for this user (its bus socket). */
  userManager?: boolean;
}

const imageKnown = new Map<string, boolean>();
const imageTimeoutMs = 60_000;

/**
 * `podman image exists`: exit 0 present, exit 1 with nothing on stderr absent. Anything else
 * (another status, a signal, the timeout, an exit 1 that says why, as a broken storage.conf
 * gives) is podman failing, and is thrown as such.
 */
function hasImage(image: string): boolean {
  if (!imageKnown.has(image)) {
    const argv = [...podmanGlobalArgs(), 'image', 'exists', image];
    const out = spawnSync(podmanBinary, argv, {
      encoding: 'utf8',
      env: podmanEnv(process.env),
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: imageTimeoutMs,
    });
    const stderr = (out.stderr ?? '').trim();
    const answered = out.status === 0 || (out.status === 1 && stderr === '');
    if (!answered) {
      const timedOut = (out.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
      const why = timedOut
        ? `no answer within ${imageTimeoutMs / 1000} s`
        : out.error
          ? out.error.message
          : out.signal
            ? `killed by ${out.signal}`
            : `exit ${out.status}`;
      throw new Error(
        `requirements: \`podman ${argv.join(' ')}\` failed (${why}), so whether ${image} is here is unknown: fix podman; this is not a skip. stderr: ${stderr.slice(-500)}`,
      );
    }
    imageKnown.set(image, out.status === 0);
  }
  return imageKnown.get(image)!;
}

function onPath(command: string): boolean {
  return (process.env['PATH'] ?? '/usr/bin:/bin').split(':').some((dir) => dir && existsSync(path.join(dir, command)));
}

/** What is missing, in words; empty when everything is here. */
export function missing(req: Requirements): string[] {
  const out: string[] = [];
  const uid = process.getuid?.() ?? 0;
  if (req.root && uid !== 0) out.push('root');
  if (req.cgroup) {
    const mode = cgroupMode() === 'v2' ? 'v2' : 'v1';
    if (mode !== req.cgroup) out.push(`cgroup ${req.cgroup} (this host is cgroup ${mode})`);
  }
  if ((req.podman || req.images) && !existsSync(podmanBinary)) out.push('podman');
  for (const image of req.images ?? [])
    if (existsSync(podmanBinary) && !hasImage(image)) out.push(`the image ${image} (bash ${imageBuildScript(image)})`);
  for (const command of req.commands ?? []) if (!onPath(command)) out.push(`the command ${command}`);
  if (req.arch && process.arch !== req.arch) out.push(`${req.arch} (this is ${process.arch})`);
  if (req.userManager && !existsSync(`/run/user/${uid}/bus`)) out.push(`a systemd user manager for uid ${uid}`);
  return out;
}

/** tap's options for a test with these needs: `{ skip: 'needs ...' }` or `{ skip: false }`. */
export function needs(req: Requirements): { skip: string | false } {
  const gaps = missing(req);
  return { skip: gaps.length > 0 ? `needs ${gaps.join(', ')}` : false };
}
