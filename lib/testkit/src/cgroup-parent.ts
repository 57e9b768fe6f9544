/**
 * A test's own parent cgroup for `--cgroup-parent`, in the form this host's cgroup manager
 * takes (the sessions' own come from podman-attrib's session-parent.ts): a path made by podman
 * under each hierarchy with cgroupfs (our v1 machines), a slice made by systemd with the
 * systemd manager (the VM tier's guest), inside the user's own manager when rootless. Removed at
 * teardown: the tree depth first, or the slice stopped.
 */
import { readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { cgroupManager, cgroupMode, type CgroupManager } from '@agent-sandbox/shared';
import { podmanEnv } from '@agent-sandbox/shared/podman';
import { randomBytes } from 'node:crypto';
import type { Teardown } from './temp-dir.js';

export interface TestCgroupParent {
  /** For --cgroup-parent / a run plan's cgroupParent. */
  arg: string;
  manager: CgroupManager;
  /** The parent below a hierarchy root: where the kernel and the host see it. */
  relPath: string;
  /** The parent's directory that holds `controller`'s files on this host (v1: per hierarchy). */
  dir(controller: string): string;
}

async function removeTree(dir: string): Promise<void> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeTree(path.join(dir, e.name));
  await rmdir(dir).catch(() => undefined);
}

/** A unique parent for one test; `label` must be letters and digits (it becomes a slice name). */
export function testCgroupParent(t: Teardown, label: string): TestCgroupParent {
  if (!/^[a-z0-9]+$/i.test(label)) throw new TypeError(`testCgroupParent: label must be [a-z0-9]+, got ${JSON.stringify(label)}`);
  const manager = cgroupManager();
  const uid = process.geteuid?.() ?? 0;
  const hex = randomBytes(4).toString('hex');
  // A slice name without '-' is one level (a '-' would nest it in another slice).
  const arg = manager === 'systemd' ? `astest_${label}_${hex}.slice` : `/astest-${label}-${hex}`;
  const relPath = manager === 'systemd' ? `${uid === 0 ? '' : `/user.slice/user-${uid}.slice/user@${uid}.service`}/${arg}` : arg;
  const v2 = cgroupMode() === 'v2';
  t.teardown(async () => {
    if (manager === 'systemd') {
      await execa('systemctl', [...(uid === 0 ? [] : ['--user']), 'stop', arg], {
        reject: false,
        env: podmanEnv(process.env),
        extendEnv: false,
      });
    }
    if (v2) await removeTree(`/sys/fs/cgroup${relPath}`);
    else for (const hierarchy of await readdir('/sys/fs/cgroup')) await removeTree(`/sys/fs/cgroup/${hierarchy}${relPath}`);
  });
  return { arg, manager, relPath, dir: (controller) => (v2 ? `/sys/fs/cgroup${relPath}` : `/sys/fs/cgroup/${controller}${relPath}`) };
}

/**
 * The container's own cgroup below a parent, if it exists now: libpod-<id> (cgroupfs) or
 * libpod-<id>.scope and crun's `container` child in it (systemd), the one the processes are in.
 */
export async function containerCgroupDir(parentDir: string): Promise<string | undefined> {
  try {
    const entry = (await readdir(parentDir)).find((e) => /^libpod-[0-9a-f]{64}(\.scope)?$/.test(e));
    if (!entry) return undefined;
    const dir = path.join(parentDir, entry);
    const inner = await readdir(dir, { withFileTypes: true }).catch(() => []);
    return inner.some((e) => e.isDirectory() && e.name === 'container') ? path.join(dir, 'container') : dir;
  } catch {
    return undefined;
  }
}
