// Section 13: what a session costs while it merely runs. The launcher and every process it
// waits for (podman, du) measured by their CPU, for a session whose agent sleeps
// --quiet-seconds minus one whose agent sleeps a quarter of that (at least 10 s), on the same
// workspace: both pay the same start and end (the first look's baseline, du at both ends), so
// what is left is the cost of running and being watched, per minute. (Until issue 35's last
// stop the short session exited at once; on a big tree it then ended before its first look
// had read every directory, and the long one's baseline, a start cost, was counted as
// watching: 120-160 ms "per minute" on 100 000 files.) The start and end are printed beside it:
// the session that exits at once. Workspaces of 10, 100 000 and 1 000 000 files (1 000 a
// directory; the last takes about 3 minutes here, most of it making the files and each
// session's first and last du), and those of --quiet-files. The same difference for the
// hand-written `podman run --rm` is the baseline: podman's own process stays attached to the
// container and its runtime wakes on its own clock, which a user's bare run pays too. The
// launcher's supervision is the difference between the two; the bound (issue 35) is at most
// 60 ms of CPU per minute, on every size. The sentinel and conmon are not the launcher's
// children and are not counted (conmon is podman's own, the same for the hand-written run; the
// sentinel sleeps on a pipe).
import { bin, options, tag, timed } from './common.mjs';
import { env, filledWorkspace, flags, makeRoot } from './fixture.mjs';
import { handWrittenArgv } from './baselines.mjs';

/** A root of its own with a workspace of `files` empty files. */
function filledRoot(files) {
  const root = makeRoot(`s13-f${files}`);
  const id = `${tag}-q${files}`;
  filledWorkspace(root, id, files);
  return { root, id };
}

/** The launcher's CPU (ms) for one session whose agent runs `sh -c SCRIPT`. */
function sessionCpu(root, id, script) {
  return timed(bin('agent-sandbox'), ['run', ...flags(root, id), '--agent-bin', 'sh', '--', '-c', script], { env }).cpu;
}

/** The middle value (the mean of the two middle ones for an even count). */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return (s[Math.floor((s.length - 1) / 2)] + s[Math.ceil((s.length - 1) / 2)]) / 2;
};

/** The short sleep: a quarter of the long one, and long enough for the first look to finish. */
const shortOf = (seconds) => Math.max(10, Math.round(seconds / 4));

/** CPU per minute of sleeping: (long sleep - short sleep) scaled to 60 s. */
const perMinute = (short, long, seconds) => ((long - short) * 60) / (seconds - shortOf(seconds));

/** The hand-written run's CPU for the short and the long sleep, --quiet-pairs times. */
function podmanBaseline(root, id, seconds) {
  const run = (name, script) => {
    const argv = handWrittenArgv(root, id, name, ['/bin/sh', '-c', script]);
    return timed(argv[0], argv.slice(1), { env }).cpu;
  };
  run('quiet-warm', 'true');
  const pairs = [];
  for (let p = 0; p < options.quietPairs; p += 1)
    pairs.push({ short: run('quiet-short', `sleep ${shortOf(seconds)}`), long: run('quiet-long', `sleep ${seconds}`) });
  return pairs;
}

export async function quiet() {
  const seconds = options.quietSeconds;
  const short = shortOf(seconds);
  if (seconds <= short) throw new Error(`--quiet-seconds must be over ${short} (the short session sleeps ${short} s)`);
  const sizes = [10, 100_000, 1_000_000, ...options.quietFiles];
  const rows = {};
  console.log(
    `\n13. a quiet session's supervision: CPU per minute of a ${seconds} s sleep minus a ${short} s one (bound: 60 ms over podman's own)`,
  );
  let podman;
  for (const files of sizes) {
    const { root, id } = filledRoot(files);
    if (!podman) {
      const b = podmanBaseline(root, id, seconds);
      podman = median(b.map((p) => perMinute(p.short, p.long, seconds)));
      console.log(
        `   hand-written podman run --rm: ${podman.toFixed(0).padStart(5)} ms CPU per minute (${short} s / ${seconds} s sleep, ms: ${b.map((p) => `${p.short}/${p.long}`).join(', ')})`,
      );
    }
    // Warm, and the start and end alone: the first session of a workspace takes its baseline walk.
    sessionCpu(root, id, 'true');
    const startAndEnd = sessionCpu(root, id, 'true');
    // Each pair is one figure; a big tree's start and end (du twice) move a pair by hundreds of ms.
    const pairs = [];
    for (let p = 0; p < options.quietPairs; p += 1) {
      const shortCpu = sessionCpu(root, id, `sleep ${short}`);
      const longCpu = sessionCpu(root, id, `sleep ${seconds}`);
      pairs.push({ short: shortCpu, long: longCpu, perMinute: perMinute(shortCpu, longCpu, seconds) });
    }
    const launcher = median(pairs.map((p) => p.perMinute));
    rows[files] = {
      pairs,
      startAndEndMs: startAndEnd,
      perMinuteMs: launcher,
      podmanPerMinuteMs: podman,
      supervisionPerMinuteMs: launcher - podman,
    };
    const each = pairs.map((p) => `${p.short}/${p.long}`).join(', ');
    console.log(
      `   ${String(files).padStart(8)} files: launcher ${launcher.toFixed(0).padStart(5)} ms per minute, supervision ${(launcher - podman).toFixed(0).padStart(5)} ms (${short} s / ${seconds} s sleep, ms: ${each}); start and end ${startAndEnd} ms`,
    );
  }
  return { podmanPerMinuteMs: podman, sizes: rows };
}
