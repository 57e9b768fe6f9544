/**
 * Is the image in podman's local storage? Answered by reading the storage's
 * images.json directly (well under a millisecond) instead of `podman image
 * exists` (a process, about 0.03 s, on every run). Only "present" is trusted;
 * anything else ("not listed", storage unreadable, an unusual driver) is
 * "unknown" and preflight asks podman once, so a wrong guess here costs time,
 * never a wrong answer.
 */
import path from 'node:path';
import type { HostProbe } from './host-probe.js';

function tomlString(text: string | undefined, key: string): string | undefined {
  if (!text) return undefined;
  const match = new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`, 'm').exec(text);
  return match?.[1] || undefined;
}

/**
 * The storage.conf podman reads for this caller, as text (undefined when none). podman runs
 * with an allowlisted environment (shared podmanEnv: no CONTAINERS_STORAGE_CONF, no XDG_*),
 * so neither is consulted here either: this answer describes the podman that will run.
 */
function storageConf(probe: HostProbe): string | undefined {
  if (probe.uid !== 0) {
    const home = probe.env['HOME'];
    const user = home ? probe.readFile(path.join(home, '.config/containers/storage.conf')) : undefined;
    if (user) return user;
  }
  return probe.readFile('/etc/containers/storage.conf') ?? probe.readFile('/usr/share/containers/storage.conf');
}

/**
 * Podman's graph root for this caller (rootful: /var/lib/containers/storage by default). A
 * rootless podman takes `graphroot` only from the user's own storage.conf: the system file's
 * graphroot is root's (Debian's containers-storage package sets it), and only its
 * `rootless_storage_path` applies to users.
 */
export function graphRoot(probe: HostProbe): string | undefined {
  const conf = storageConf(probe);
  if (probe.uid === 0) return tomlString(conf, 'graphroot') ?? '/var/lib/containers/storage';
  const home = probe.env['HOME'];
  const userConf = home ? probe.readFile(path.join(home, '.config/containers/storage.conf')) : undefined;
  const configured = (userConf ? tomlString(userConf, 'graphroot') : undefined) ?? tomlString(conf, 'rootless_storage_path');
  if (configured) return configured.replace(/\$HOME/g, home ?? '$HOME').replace(/\$UID/g, String(probe.uid));
  return home ? path.join(home, '.local/share/containers/storage') : undefined;
}

/** Names under which podman would find a local image given as `image`. */
export function candidateNames(image: string): string[] {
  const lastSlash = image.lastIndexOf('/');
  const last = image.slice(lastSlash + 1);
  const tagged = last.includes(':') || last.includes('@') ? image : `${image}:latest`;
  const first = tagged.split('/')[0] ?? '';
  const hasRegistry = tagged.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasRegistry ? [tagged] : [tagged, `localhost/${tagged}`];
}

/** "present" when images.json lists the image by name or id prefix; otherwise "unknown" (ask podman). */
export function imageInStorage(image: string, probe: HostProbe): 'present' | 'unknown' {
  const root = graphRoot(probe);
  if (!root) return 'unknown';
  const driver = tomlString(storageConf(probe), 'driver');
  const names = new Set(candidateNames(image));
  const byId = /^[0-9a-f]{12,64}$/.test(image);
  for (const d of [...new Set([driver, 'overlay', 'vfs'].filter((x): x is string => Boolean(x)))]) {
    const text = probe.readFile(path.join(root, `${d}-images`, 'images.json'));
    if (text === undefined) continue;
    let images: { id?: string; names?: string[] }[];
    try {
      images = JSON.parse(text);
    } catch {
      return 'unknown';
    }
    if (!Array.isArray(images)) return 'unknown';
    const found = images.some((img) => (byId && img.id?.startsWith(image)) || (img.names ?? []).some((n) => names.has(n)));
    if (found) return 'present';
  }
  return 'unknown';
}
