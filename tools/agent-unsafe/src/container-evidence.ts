/**
 * Are we inside a container? Any one signal is enough; every signal found is
 * returned so the refusal can name them. A file we cannot read is no evidence
 * either way (/proc/1/environ is readable only by root or PID 1's owner).
 */
import type { HostView } from './host-view.js';

/** cgroup path components that container runtimes create. */
export const containerCgroupPattern = /(^|[/:_.-])(libpod|docker|containerd|kubepods|cri-containerd|crio|lxc|buildkit)([/_.-]|$)/;

export const containerFiles: readonly string[] = ['/run/.containerenv', '/.dockerenv'];

export const cgroupFiles: readonly string[] = ['/proc/1/cgroup', '/proc/self/cgroup'];

/** The lines of a cgroup file that name a container runtime. */
export function containerCgroupLines(text: string): string[] {
  return text.split('\n').filter((line) => containerCgroupPattern.test(line.split(':').slice(2).join(':')));
}

/** True when a NUL-separated environ block has a `container=` entry. */
export function environHasContainer(environ: string): boolean {
  return environ.split('\0').some((entry) => entry.startsWith('container='));
}

/** Every container signal seen, as human-readable evidence strings; empty means none. */
export function containerEvidence(host: HostView, env: NodeJS.ProcessEnv): string[] {
  const found: string[] = [];
  for (const file of containerFiles) if (host.exists(file)) found.push(`${file} exists`);
  for (const file of cgroupFiles) {
    const text = host.read(file);
    const line = text === undefined ? undefined : containerCgroupLines(text)[0];
    if (line !== undefined) found.push(`${file} names a container cgroup (${line.trim()})`);
  }
  const environ = host.read('/proc/1/environ');
  if (environ !== undefined && environHasContainer(environ)) found.push('PID 1 has container= in its environment');
  if (env['container'] !== undefined) found.push('container= is set in this environment');
  return found;
}
