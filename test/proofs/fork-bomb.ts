// The fork bomb of ceiling.test.ts and what the host does while it runs: the bomb's script, the
// wait until it sits at its ceiling, and the host's own forks beside it (each of them must still
// succeed while the bomb's count never drops).
import { execa, type Result } from 'execa';
import { readFile } from 'node:fs/promises';
import { containerCgroupDir } from '@agent-sandbox/testkit';
import { files } from './cgroup-view.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const readNumber = async (file: string) => Number((await readFile(file, 'utf8')).trim().split(/\s+/).pop());

/**
 * Each of the bomb's shells forks another every 0.2 s forever and never exits, so the bomb stays
 * at the ceiling (a `bomb | bomb &` bomb thins out as bash's fork retries give up); it sleeps
 * in bash's own `read -t` on a fifo, never in a program it would have to fork. The sampler uses
 * only builtins too ([ is bash's own, {1..N} needs no seq), so it keeps running at the limit.
 * It prints `samples` lines `sample current=N events=N`, then `max=N`, and exits 0 once the
 * host creates /sandbox/hold/release.
 */
export function forkBombScript(samples: number): string {
  return [
    'mkfifo /tmp/tick; exec 3<>/tmp/tick',
    'bomb() { while :; do ( bomb ) & read -t 0.2 x <&3; done; }',
    '( bomb ) 2>/dev/null &',
    `for i in {1..${samples}}; do read -t 0.5 x <&3; read c < ${files.pidsCurrent}; read e < ${files.pidsEvents}; echo "sample current=$c events=\${e#max }"; done`,
    `read m < ${files.pidsMax}; echo "max=$m"`,
    'while [ ! -e /sandbox/hold/release ]; do read -t 0.5 x <&3; done',
    'exit 0',
  ].join('\n');
}

/**
 * Waits until the container's cgroup under `parentDir` holds at least 60 tasks, or the session
 * ended (`done` settled): a rootless start under the VM tier's emulation can take over a minute.
 */
export async function untilAtCeiling(parentDir: string, done: Promise<unknown>): Promise<{ atCeiling: number; dir: string | undefined }> {
  let atCeiling = 0;
  let dir: string | undefined;
  let ended = false;
  done.then(
    () => (ended = true),
    () => (ended = true),
  );
  for (const deadline = Date.now() + 600_000; Date.now() < deadline && atCeiling < 60 && !ended;) {
    dir = await containerCgroupDir(parentDir);
    if (dir) atCeiling = await readNumber(`${dir}/pids.current`).catch(() => 0);
    if (atCeiling < 60) await sleep(100);
  }
  return { atCeiling, dir };
}

/** 20 host processes forked while the bomb runs, and the lowest count of the bomb's cgroup (`dir`) sampled meanwhile. */
export async function hostForksDuringBomb(dir: string | undefined): Promise<{ forks: Result[]; ms: number; bombMin: number }> {
  const t0 = Date.now();
  let forking = true;
  let bombMin = Infinity;
  const sampling = (async () => {
    while (forking && dir) {
      bombMin = Math.min(bombMin, await readNumber(`${dir}/pids.current`).catch(() => 0));
      await sleep(20);
    }
  })();
  const forks = await Promise.all(Array.from({ length: 20 }, (_, i) => execa('sh', ['-c', `echo host-fork-${i}`], { reject: false })));
  forking = false;
  await sampling;
  return { forks, ms: Date.now() - t0, bombMin };
}
