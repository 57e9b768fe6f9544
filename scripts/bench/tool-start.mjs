// Section 2: each executable's cold start for a typical input, against `node -e 0` (the target
// is at most 2x). nnp-probe and podman-attrib are also given against `node -e 0` plus the
// commands their job is to run (measured beside them: systemd-run, loginctl, podman inspect).
import os from 'node:os';
import { bin, compare, image, ms, tag, timed } from './common.mjs';
import { env, home, makeRoot, nodeZero, plainWorkspace } from './fixture.mjs';

function cases(root, id, ws, attribCtr) {
  const plan = {
    image,
    sessionId: id,
    limits: { memory: '256m', memorySwap: '256m', pids: 64, cpus: 1, cpuShares: 256 },
    command: ['true'],
  };
  return {
    'node -e 0': nodeZero,
    'path-guard {path,root}': () => timed(bin('path-guard'), [], { input: JSON.stringify({ path: `workspaces/${id}`, root }) }),
    'cred-stage plan codex': () => timed(bin('cred-stage'), ['plan'], { input: JSON.stringify({ runtime: 'codex', home }), env }),
    'mount-plan {workspace,root,id}': () => timed(bin('mount-plan'), [], { input: JSON.stringify({ workspace: ws, root, sessionId: id }) }),
    'nnp-probe': () => timed(bin('nnp-probe'), []),
    // What nnp-probe must ask every time (measure, never assume): systemd's version and linger.
    'systemd-run --version': () => timed('systemd-run', ['--version']),
    'loginctl show-user (linger)': () =>
      timed('loginctl', ['show-user', os.userInfo().username, '--property=Linger', '--value'], { expect: 'any' }),
    'sandbox-run --dry-run': () => timed(bin('sandbox-run'), ['--dry-run'], { input: JSON.stringify(plan) }),
    'podman-attrib --container (kept)': () => timed(bin('podman-attrib'), ['--container', attribCtr]),
    'podman container inspect (kept)': () => timed('podman', ['--runtime', 'runc', 'container', 'inspect', attribCtr]),
    'agent-unsafe codex (no TTY: 90)': () => timed(bin('agent-unsafe'), ['codex', '--', '--version'], { expect: [90] }),
    'agent-sandbox hosts': () => timed(bin('agent-sandbox'), ['hosts'], { env }),
    'egress-proxy check': () => timed(bin('egress-proxy'), ['check', '--target', 'api.openai.com', '--allow', 'api.openai.com']),
  };
}

/** The ratio against node -e 0, and for the tools whose job starts commands, against node -e 0 plus those. */
function ratios(r) {
  const against = (field, k, ...others) => r[k][field] / ['node -e 0', ...others].reduce((sum, o) => sum + r[o][field], 0);
  const out = Object.fromEntries(Object.keys(r).map((k) => [k, { vsNode: against('median', k), cpuVsNode: against('cpu', k) }]));
  const jobs = {
    'nnp-probe': ['systemd-run --version', 'loginctl show-user (linger)'],
    'podman-attrib --container (kept)': ['podman container inspect (kept)'],
  };
  for (const [k, others] of Object.entries(jobs))
    Object.assign(out[k], { vsJob: against('median', k, ...others), cpuVsJob: against('cpu', k, ...others) });
  return out;
}

export async function toolStart() {
  const root = makeRoot('s2');
  const id = `${tag}-s2`;
  const ws = plainWorkspace(root, id);
  const attribCtr = `${tag}-attrib`;
  timed('podman', [
    '--runtime',
    'runc',
    'run',
    '--name',
    attribCtr,
    '--ulimit',
    'nofile=4096:4096',
    '--ulimit',
    'nproc=4096:4096',
    '--entrypoint',
    'true',
    image,
  ]);
  const r = await compare(cases(root, id, ws, attribCtr));
  const x = ratios(r);
  console.log(
    '\n2. executable cold start vs node -e 0 (target: <= 2x each): wall (median) and CPU (mean, the tool and what it waited for)',
  );
  for (const [k, v] of Object.entries(r)) {
    const job = x[k].vsJob ? `   (vs node -e 0 + the commands it runs: ${x[k].vsJob.toFixed(2)}x, CPU ${x[k].cpuVsJob.toFixed(2)}x)` : '';
    console.log(
      `   ${k.padEnd(36)} ${ms(v.median)} ${x[k].vsNode.toFixed(2)}x   CPU ${v.cpu.toFixed(0).padStart(4)} ms ${x[k].cpuVsNode.toFixed(2)}x${job}`,
    );
  }
  return { ...r, ratios: x };
}
