// Section 12: the container side, before the agent's first instruction. What the image's
// entrypoint (cred-stage install) and the relay cost in wall time and in the container's own CPU
// (the cpuacct of a parent cgroup per case, podman's --cgroup-parent: the container and its
// conmon), against the hand-written run (baselines.mjs), runs interleaved; with --versus IMAGE
// the same cases with that image in the same loop. Then each step alone, inside one container of
// each image (rounds alternate the images): node -e 0, cred-stage install, egress-relay -- true,
// and the socat relay's script -- true (what sessions run since issue 35). The bare run with the
// node relay in place of socat's script is a case of its own: the two relays in the same loop.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { image, median, onTeardown, options, tag, timed } from './common.mjs';
import { base, env, launcher, makeRoot, plainWorkspace } from './fixture.mjs';
import { bareArgv, handWrittenArgv, stagedCopy } from './baselines.mjs';
import { socatRelayScript } from '../../tools/egress-proxy/dist/index.js';

const parentOf = (name) => `${tag}-cs-${name}`;
const cpuMs = (name) => {
  const file = `/sys/fs/cgroup/cpuacct/${parentOf(name)}/cpuacct.usage`;
  return existsSync(file) ? Number(readFileSync(file, 'utf8')) / 1e6 : 0;
};

/** Runs `argv` under its own parent cgroup: wall, and the CPU the parent gained (container and conmon). */
function inParent(name, argv) {
  const withParent = [...argv];
  withParent.splice(withParent.indexOf('--name'), 0, `--cgroup-parent=/${parentOf(name)}`);
  return () => {
    const before = cpuMs(name);
    const r = timed(withParent[0], withParent.slice(1), { env });
    return { ...r, cpu: cpuMs(name) - before };
  };
}

/** The parents podman made (and conmon's, libpod's below them), in every hierarchy, depth first. */
function removeParents() {
  spawnSync(
    'sh',
    ['-c', `for h in /sys/fs/cgroup/*/; do find "$h" -maxdepth 3 -type d -path "*${tag}-cs-*" | sort -r | xargs -r rmdir; done`],
    { stdio: 'ignore' },
  );
}

/** `argv` with the node relay in front of the command in place of the socat script beside it. */
function withNodeRelay(argv) {
  const at = argv.indexOf(socatRelayScript);
  if (at < 2) throw new Error("the plan's argv has no socat relay script");
  const [socket, port] = argv.slice(at + 2, at + 4); // then the connections at once, which the node relay does not take
  return [...argv.slice(0, at - 2), 'egress-relay', '--socket', socket, '--listen', `127.0.0.1:${port}`, '--', ...argv.slice(at + 5)];
}

function cases(root, id, staged) {
  const withImage = (argv, img) => argv.map((x) => (x === image ? img : x));
  const images = { this: image, ...(options.versus ? { versus: options.versus } : {}) };
  const out = { 'hand-written /bin/true': inParent('hand', handWrittenArgv(root, id, 'cs-hand', ['/bin/true'])) };
  for (const [which, img] of Object.entries(images)) {
    out[`bare, no relay (${which})`] = inParent(
      `none-${which}`,
      withImage(bareArgv(root, id, ['--egress', 'none'], `cs-none-${which}`, staged), img),
    );
    out[`bare, relay (${which})`] = inParent(`relay-${which}`, withImage(bareArgv(root, id, [], `cs-relay-${which}`, staged), img));
  }
  out['bare, node relay (this)'] = inParent('node-relay', withNodeRelay(bareArgv(root, id, [], 'cs-node-relay', staged)));
  return out;
}

/** Each step alone, `n` times, inside one container of `img`: [{step, wall, cpu}] in ms. */
function stepsInside(img, staged, n) {
  const script = path.join(base, 'container-steps.sh');
  writeFileSync(
    script,
    `#!/bin/bash
TIMEFORMAT='%R %U %S'
mkdir -p /tmp/home && export HOME=/tmp/home
for i in $(seq 1 ${n}); do
  echo "node -e 0 $( { time node -e 0 >/dev/null 2>&1; } 2>&1 )"
  echo "cred-stage install $( { time cred-stage install >/dev/null 2>&1; } 2>&1 )"
  echo "egress-relay -- true $( { time egress-relay --socket /run/none.sock -- true >/dev/null 2>&1; } 2>&1 )"
  echo "socat relay script, true $( { time sh -c "$(cat /relay.sh)" egress-relay /run/none.sock $((20000 + i)) 16 true >/dev/null 2>&1; } 2>&1 )"
done
`,
  );
  chmodSync(script, 0o755);
  const relay = path.join(base, 'relay.sh');
  writeFileSync(relay, socatRelayScript);
  const argv = [
    '--runtime',
    'runc',
    'run',
    '--rm',
    '--network=none',
    '--user',
    '1000:1000',
    '--cap-drop=ALL',
    '--ulimit',
    'nofile=4096:4096',
    '--ulimit',
    'nproc=4096:4096',
    '-v',
    `${script}:/steps.sh:ro`,
    '-v',
    `${relay}:/relay.sh:ro`,
    '-v',
    `${staged}:/sandbox-secrets/codex/auth.json:ro`,
    '--entrypoint',
    '/steps.sh',
    img,
  ];
  const r = timed('podman', argv, { env });
  return r.stdout
    .trim()
    .split('\n')
    .map((line) => {
      const [real, user, sys] = line.split(' ').slice(-3).map(Number);
      return { step: line.split(' ').slice(0, -3).join(' '), wall: real * 1000, cpu: (user + sys) * 1000 };
    });
}

const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(0)}`;

function report(walls, cpus, steps) {
  const m = (k) => median(walls[k]);
  const c = (k) => median(cpus[k]);
  console.log(
    `\n12. the container side before the agent (medians of ${options.runs} interleaved runs; CPU: the container's cgroup, conmon's included)`,
  );
  for (const k of Object.keys(walls))
    console.log(`   ${k.padEnd(40)} wall ${m(k).toFixed(0).padStart(5)} ms   CPU ${c(k).toFixed(0).padStart(4)} ms`);
  const hand = 'hand-written /bin/true';
  for (const which of ['this', 'versus']) {
    const none = `bare, no relay (${which})`;
    const relay = `bare, relay (${which})`;
    if (!walls[none]) continue;
    console.log(
      `   ${which}: entrypoint and cred-stage install (bare without relay - hand-written): ${signed(m(none) - m(hand))} ms wall, ${signed(c(none) - c(hand))} ms CPU; the relay (bare with - without): ${signed(m(relay) - m(none))} ms wall, ${signed(c(relay) - c(none))} ms CPU`,
    );
  }
  console.log(
    `   the relay, socat's script against the node relay (bare with each - without): ${signed(m('bare, relay (this)') - m('bare, no relay (this)'))} against ${signed(m('bare, node relay (this)') - m('bare, no relay (this)'))} ms wall, ${signed(c('bare, relay (this)') - c('bare, no relay (this)'))} against ${signed(c('bare, node relay (this)') - c('bare, no relay (this)'))} ms CPU`,
  );
  if (walls['bare, relay (versus)']) {
    for (const kind of ['no relay', 'relay'])
      console.log(
        `   this / versus, bare ${kind}: wall ${(m(`bare, ${kind} (this)`) / m(`bare, ${kind} (versus)`)).toFixed(2)}, CPU ${(c(`bare, ${kind} (this)`) / c(`bare, ${kind} (versus)`)).toFixed(2)}`,
      );
  }
  for (const [which, rows] of Object.entries(steps)) {
    const by = {};
    for (const r of rows) (by[r.step] ??= []).push(r);
    console.log(
      `   each step alone inside one container (${which}, ${rows.length / Object.keys(by).length} times): ${Object.entries(by)
        .map(([s, xs]) => `${s} ${median(xs.map((x) => x.wall)).toFixed(0)} ms wall / ${median(xs.map((x) => x.cpu)).toFixed(0)} ms CPU`)
        .join('; ')}`,
    );
  }
}

export async function containerSide() {
  onTeardown(removeParents);
  const root = makeRoot('s12');
  const id = `${tag}-cs`;
  plainWorkspace(root, id);
  launcher('run', root, id)(); // makes the session home the bare runs mount
  const staged = stagedCopy();
  const all = cases(root, id, staged);
  const walls = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
  const cpus = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
  for (let i = 0; i < options.runs; i += 1) {
    for (const [k, fn] of Object.entries(all)) {
      const r = fn();
      walls[k].push(r.wall);
      cpus[k].push(r.cpu);
    }
  }
  const steps = { this: [], ...(options.versus ? { versus: [] } : {}) };
  for (let round = 0; round < 3; round += 1) {
    for (const which of Object.keys(steps)) steps[which].push(...stepsInside(which === 'this' ? image : options.versus, staged, 7));
  }
  report(walls, cpus, steps);
  return {
    walls: Object.fromEntries(Object.entries(walls).map(([k, v]) => [k, median(v)])),
    cpu: Object.fromEntries(Object.entries(cpus).map(([k, v]) => [k, median(v)])),
  };
}
