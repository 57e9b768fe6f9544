import { randomBytes } from 'node:crypto';
import { runPodman } from '@agent-sandbox/shared/podman';
import type { Teardown } from './temp-dir.js';

/** The images the tests run (built by image/build-all.sh and image/build-agents.sh). */
export const sessionImage = 'localhost/agent-sandbox:latest';
export const busyboxImage = 'localhost/agent-sandbox-busybox:latest';

/**
 * The hardening every test container gets when a test calls podman directly (sandbox-run
 * adds the same and more for real sessions): no capabilities, no privilege gain, no network,
 * ulimits at or below this machine's hard limits (podman's defaults fail here).
 */
export const hardeningFlags: readonly string[] = [
  '--cap-drop=ALL',
  '--security-opt=no-new-privileges',
  '--network=none',
  '--ulimit',
  'nofile=4096:4096',
  '--ulimit',
  'nproc=4096:4096',
];

/** Every container a test makes carries this prefix, so leaks are found and only ours removed. */
export const testPrefix = 'astest-';

/** A unique container name for one test; the container is force-removed when the test ends. */
export function containerName(t: Teardown, label: string): string {
  const name = `${testPrefix}${label}-${randomBytes(4).toString('hex')}`;
  t.teardown(async () => {
    await runPodman(['rm', '--force', '--ignore', '--time', '0', name], { expect: 'any' });
  });
  return name;
}

/** Names of test containers still present (the leak check). */
export async function leakedContainers(): Promise<string[]> {
  const out = await runPodman(['ps', '-a', '--format', '{{.Names}}'], { expect: 'any' });
  return out.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith(testPrefix));
}

/** The script that builds an image: the agents image has its own (its npm tree), the rest build together. */
export function imageBuildScript(image: string): string {
  return image === 'localhost/agent-sandbox-agents:latest' ? 'image/build-agents.sh' : 'image/build-all.sh';
}

/**
 * True when the image exists locally, false when podman says it does not (`podman image
 * exists` exits 1 and says nothing). Any other answer (podman failing, timing out, an exit 1
 * with a reason on stderr) throws: a broken podman is a failure to report, never "missing".
 */
export async function imageExists(image: string): Promise<boolean> {
  const out = await runPodman(['image', 'exists', image], { expect: [0, 1] });
  if (out.exitCode === 1 && out.stderr.trim() !== '') {
    throw new Error(`podman image exists ${image} failed (exit 1): ${out.stderr.trim().slice(-500)}; whether the image is here is unknown`);
  }
  return out.exitCode === 0;
}
