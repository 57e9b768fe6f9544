// Section 1: what a session costs over the container it runs. `agent-sandbox run -- true`, with
// its broker (the default) and with --egress none, against a bare `podman run --rm` of the
// launcher's own argv (from `agent-sandbox plan`: the same image, flags, limits and mounts; with
// the broker's relay in front of `true`, and without). The processes a session starts, by strace.
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bin, compare, printCases, tag, timed } from './common.mjs';
import { base, env, flags, home, launcher, makeRoot, nodeZero, plainWorkspace, processesOf } from './fixture.mjs';

/** A staged credential as the launcher stages one (owned by the container's uid, 0400), for the bare runs. */
function stagedCopy() {
  const staged = path.join(base, 'bare-secret', 'auth.json');
  mkdirSync(path.dirname(staged), { recursive: true, mode: 0o700 });
  writeFileSync(staged, readFileSync(path.join(home, '.codex', 'auth.json')), { mode: 0o400 });
  chownSync(path.dirname(staged), 1000, 1000);
  chownSync(staged, 1000, 1000);
  return staged;
}

/**
 * The plan's argv as a bare run: its own container name, the staged copy in place of the
 * session's (plan stages nothing), an empty directory in place of the broker's socket directory.
 */
function bareArgv(root, id, extra, name, staged) {
  const plan = JSON.parse(launcher('plan', root, id, extra)().stdout);
  const socketDir = path.join(base, 'bare-egress');
  mkdirSync(socketDir, { recursive: true, mode: 0o711 });
  const argv = plan.argv.map((a) =>
    a.replace(`source=${path.join(root, 'secrets', id, 'codex', 'auth.json')},`, `source=${staged},`).replace(/source=\/run\/agent-sandbox\/egress\/[^,]+,/, `source=${socketDir},`),
  );
  argv[argv.indexOf('--name') + 1] = `agent-sandbox-${tag}-${name}`;
  return argv;
}

const named = {
  run: 'agent-sandbox run -- true (broker)',
  none: 'agent-sandbox run --egress none -- true',
  bareRelay: 'podman run --rm, same argv (relay)',
  bare: 'podman run --rm, same argv (no relay)',
};

export async function sessionOverhead() {
  const root = makeRoot('s1');
  const id = `${tag}-s1`;
  plainWorkspace(root, id);
  launcher('run', root, id)(); // makes the session home the bare runs mount
  const staged = stagedCopy();
  const withRelay = bareArgv(root, id, [], 'bare-relay', staged);
  const noRelay = bareArgv(root, id, ['--egress', 'none'], 'bare', staged);
  const r = compare({
    [named.run]: launcher('run', root, id),
    [named.none]: launcher('run', root, id, ['--egress', 'none']),
    [named.bareRelay]: () => timed(withRelay[0], withRelay.slice(1), { env }),
    [named.bare]: () => timed(noRelay[0], noRelay.slice(1), { env }),
    'node -e 0': nodeZero,
  });
  const ratios = {
    broker: r[named.run].median / r[named.bareRelay].median,
    none: r[named.none].median / r[named.bare].median,
    relay: r[named.bareRelay].median / r[named.bare].median,
    brokerVsNone: r[named.run].median / r[named.none].median,
  };
  const procs = processesOf(bin('agent-sandbox'), ['run', ...flags(root, id), '--agent-bin', 'true', '--']);
  const bareProcs = processesOf(withRelay[0], withRelay.slice(1));
  console.log('\n1. session overhead: a session against a bare podman run of its own argv');
  printCases(r);
  console.log(`   run / bare (both with the relay)             ${ratios.broker.toFixed(2)}`);
  console.log(`   run --egress none / bare (no relay)          ${ratios.none.toFixed(2)}`);
  console.log(`   the relay in the container: bare / bare      ${ratios.relay.toFixed(2)}   the broker, launcher side: run / run --egress none ${ratios.brokerVsNone.toFixed(2)}`);
  console.log(`   podman processes per session: launcher ${procs.podman ?? 0}, bare ${bareProcs.podman ?? 0} (podman's own exit cleanup included in both)`);
  const known = ['podman', 'conmon', 'runc', 'exe', 'tini', 'node', 'agent-entrypoint', 'find', 'cred-stage', 'egress-relay', 'true', 'agent-sandbox', 'env'];
  const other = Object.entries(procs).filter(([k]) => !known.includes(k));
  console.log(`   other host processes of the launcher: ${other.map(([k, v]) => `${k} x${v}`).join(', ') || 'none'}`);
  return { ...r, ratios, processes: { launcher: procs, bare: bareProcs } };
}
