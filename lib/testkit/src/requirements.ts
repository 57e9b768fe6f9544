/**
 * What a test needs of the machine, turned into tap's skip option with the reason: a test that
 * cannot run here is reported as a skip naming what is missing, never as a pass, and a whole
 * file's tests each carry it (a top-level `t.skip()` does not stop a file).
 *
 *   t.test('claim', needs({ root: true, podman: true, images: [sessionImage] }), async (t) => ...)
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { cgroupMode, podmanGlobalArgs } from '@agent-sandbox/shared';
import { podmanBinary } from '@agent-sandbox/shared/podman';

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

function hasImage(image: string): boolean {
  if (!imageKnown.has(image)) {
    let ok = false;
    try {
      execFileSync(podmanBinary, [...podmanGlobalArgs(), 'image', 'exists', image], { stdio: 'ignore', timeout: 30_000 });
      ok = true;
    } catch {
      ok = false;
    }
    imageKnown.set(image, ok);
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
  for (const image of req.images ?? []) if (existsSync(podmanBinary) && !hasImage(image)) out.push(`the image ${image} (bash image/build-all.sh)`);
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
