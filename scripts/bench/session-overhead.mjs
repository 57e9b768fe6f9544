// Section 1: what a session costs over the container it runs. `agent-sandbox run -- true`, with
// its broker (the default) and with --egress none, against two baselines run in the same loop:
// the hand-written `podman run --rm` a user would type (baselines.mjs: the session's flags,
// limits and mounts, the credential mounted directly, `--entrypoint /bin/true`, no relay), and a
// bare `podman run --rm` of the launcher's own argv (from `agent-sandbox plan`: the same image
// and entrypoint, with the broker's relay in front of `true`, and without). Also the agent's
// first output (`--agent-bin /bin/echo`: spawn to the first byte on stdout) against the
// hand-written run's, the time from the container's end (podman's `died` event) to the exit of
// the command that ran it, and the processes a session starts (strace). With --agents IMAGE (the
// agents image, Claude Code in it): the real agent's first output, `claude --version`, through
// the launcher and hand-written, in the same loop.
import { bin, compare, firstOutput, image, options, printCases, tag, timed } from './common.mjs';
import { defaultLedger, env, flags, launcher, makeRoot, nodeZero, plainWorkspace, processesOf } from './fixture.mjs';
import { bareArgv, diedEvents, endToExit, handWrittenArgv, stagedCopy } from './baselines.mjs';

const named = {
  run: 'agent-sandbox run -- true (broker)',
  none: 'agent-sandbox run --egress none -- true',
  hand: 'podman run --rm, hand-written /bin/true',
  bareRelay: 'podman run --rm, same argv (relay)',
  bare: 'podman run --rm, same argv (no relay)',
  bareNoCred: 'podman run --rm, same argv (no relay, nothing staged)',
  firstRun: 'first output: run --agent-bin /bin/echo',
  firstNone: 'first output: run --egress none',
  firstHand: 'first output: hand-written /bin/echo',
  claudeRun: 'first output: run, claude --version (--agents)',
  claudeHand: 'first output: hand-written claude --version',
};

/** With --agents IMAGE: Claude Code's `--version` through the launcher (its default broker) and hand-written, in that image. */
function agentsCases(root, id) {
  const img = options.agents;
  const hand = handWrittenArgv(root, id, 'hand-claude', ['claude', '--version']).map((x) => (x === image ? img : x));
  return {
    [named.claudeRun]: () =>
      firstOutput(bin('agent-sandbox'), ['run', ...flags(root, id, defaultLedger, img), '--agent-bin', 'claude', '--', '--version'], {
        env,
      }),
    [named.claudeHand]: () => firstOutput(hand[0], hand.slice(1), { env }),
  };
}

/** Every case of the section, interleaved in one loop. */
function cases(root, id, staged) {
  const withRelay = bareArgv(root, id, [], 'bare-relay', staged);
  const noRelay = bareArgv(root, id, ['--egress', 'none'], 'bare', staged);
  // The same without the staged credential's mount: the entrypoint then skips cred-stage install.
  const noCred = bareArgv(root, id, ['--egress', 'none'], 'bare-nocred', staged).filter(
    (a) => !(a.startsWith('--mount=') && a.includes('destination=/sandbox-secrets/')),
  );
  const hand = handWrittenArgv(root, id, 'hand', ['/bin/true']);
  const handEcho = handWrittenArgv(root, id, 'hand-echo', ['/bin/echo', 'first-output']);
  const echo = (extra) => () =>
    firstOutput(bin('agent-sandbox'), ['run', ...flags(root, id), ...extra, '--agent-bin', '/bin/echo', '--', 'first-output'], { env });
  return {
    argv: { withRelay, noRelay, hand },
    cases: {
      [named.run]: launcher('run', root, id),
      [named.none]: launcher('run', root, id, ['--egress', 'none']),
      [named.hand]: () => timed(hand[0], hand.slice(1), { env }),
      [named.bareRelay]: () => timed(withRelay[0], withRelay.slice(1), { env }),
      [named.bare]: () => timed(noRelay[0], noRelay.slice(1), { env }),
      [named.bareNoCred]: () => timed(noCred[0], noCred.slice(1), { env }),
      [named.firstRun]: echo([]),
      [named.firstNone]: echo(['--egress', 'none']),
      [named.firstHand]: () => firstOutput(handEcho[0], handEcho.slice(1), { env }),
      'node -e 0': nodeZero,
    },
  };
}

/**
 * With --versus IMAGE: the launcher's runs, the bare runs and the first output again with that
 * image, in the same loop (so a change to the image is measured against the image before it).
 */
function versusCases(root, id, argv) {
  const other = options.versus;
  const swap = (a) => a.map((x) => (x === image ? other : x));
  const run = (extra, agent) => () =>
    timed(
      bin('agent-sandbox'),
      [
        'run',
        ...flags(root, id, defaultLedger, other),
        ...extra,
        '--agent-bin',
        agent,
        '--',
        ...(agent === 'true' ? [] : ['first-output']),
      ],
      { env },
    );
  const relay = swap(argv.withRelay);
  const bare = swap(argv.noRelay);
  return {
    [`${named.run} @versus`]: run([], 'true'),
    [`${named.none} @versus`]: run(['--egress', 'none'], 'true'),
    [`${named.bareRelay} @versus`]: () => timed(relay[0], relay.slice(1), { env }),
    [`${named.bare} @versus`]: () => timed(bare[0], bare.slice(1), { env }),
    [`${named.firstRun} @versus`]: () =>
      firstOutput(
        bin('agent-sandbox'),
        ['run', ...flags(root, id, defaultLedger, other), '--agent-bin', '/bin/echo', '--', 'first-output'],
        { env },
      ),
  };
}

/** Each case run with --versus's image against the same case with this one: this / versus. */
function reportVersus(r) {
  console.log(`   this image (${image}) / --versus image (${options.versus}), same case, median wall:`);
  for (const k of ['run', 'none', 'bareRelay', 'bare', 'firstRun']) {
    const v = r[`${named[k]} @versus`];
    if (v) console.log(`     ${named[k].padEnd(44)} ${(r[named[k]].median / v.median).toFixed(2)}`);
  }
}

/** From the container's end (its `died` event) to the exit of the command that ran it, per case. */
function endsToExit(r, id, since) {
  const events = diedEvents(since, tag);
  return {
    run: endToExit(r[named.run].runs, `agent-sandbox-${id}`, events),
    none: endToExit(r[named.none].runs, `agent-sandbox-${id}`, events),
    hand: endToExit(r[named.hand].runs, `agent-sandbox-${tag}-hand`, events),
  };
}

function report(r, ratios, ends, procs, bareProcs) {
  const line = (label, x, asked = '') => console.log(`   ${label.padEnd(60)} ${x.toFixed(2)}${asked}`);
  const end = (e) => (e.n ? `${e.median.toFixed(0)} ms (max ${e.max.toFixed(0)}, ${e.n} runs)` : 'no died event seen');
  console.log('\n1. session overhead: a session against the hand-written podman run, and a bare podman run of its own argv');
  printCases(r);
  line('run / hand-written podman run', ratios.hand, '   (issue 25 asks at most 1.6)');
  line('run --egress none / hand-written podman run', ratios.noneHand, '   (at most 1.4)');
  line("first output: run / hand-written run's", ratios.first, '   (at most 1.5)');
  line("first output: run --egress none / hand-written run's", ratios.firstNone);
  if (ratios.claude)
    line("first output, Claude Code --version (--agents): run / hand-written run's", ratios.claude, '   (issue 35 asks at most 1.6)');
  console.log(
    `   container's end (podman's died event) to exit, median: run ${end(ends.run)}; run --egress none ${end(ends.none)}; hand-written podman run ${end(ends.hand)}`,
  );
  line('run / bare (both with the relay)', ratios.broker);
  line('run --egress none / bare (no relay)', ratios.none);
  line('the image entrypoint without the relay: bare / hand-written', ratios.entrypoint);
  line('the relay in the container: bare / bare', ratios.relay);
  line('cred-stage install in the container: bare / bare with nothing staged', ratios.credStage);
  console.log(`   cred-stage install's share of a bare run: ${ratios.credStageMs.toFixed(0)} ms of wall (median difference)`);
  line('the broker, launcher side: run / run --egress none', ratios.brokerVsNone);
  console.log(
    `   podman processes per session: launcher ${procs.podman ?? 0}, bare ${bareProcs.podman ?? 0} (podman's own exit cleanup included in both)`,
  );
  const known = [
    'podman',
    'conmon',
    'runc',
    'exe',
    'tini',
    'node',
    'agent-entrypoint',
    'find',
    'cred-stage',
    'egress-relay',
    'socat',
    'true',
    'agent-sandbox',
    'env',
  ];
  const other = Object.entries(procs).filter(([k]) => !known.includes(k));
  console.log(`   other host processes of the launcher: ${other.map(([k, v]) => `${k} x${v}`).join(', ') || 'none'}`);
}

export async function sessionOverhead() {
  const root = makeRoot('s1');
  const id = `${tag}-s1`;
  plainWorkspace(root, id);
  launcher('run', root, id)(); // makes the session home the bare runs mount
  const { argv, cases: all } = cases(root, id, stagedCopy());
  const since = Date.now();
  const r = await compare({
    ...all,
    ...(options.versus ? versusCases(root, id, argv) : {}),
    ...(options.agents ? agentsCases(root, id) : {}),
  });
  const m = (k) => r[named[k]].median;
  const ratios = {
    hand: m('run') / m('hand'),
    noneHand: m('none') / m('hand'),
    first: m('firstRun') / m('firstHand'),
    firstNone: m('firstNone') / m('firstHand'),
    broker: m('run') / m('bareRelay'),
    none: m('none') / m('bare'),
    entrypoint: m('bare') / m('hand'),
    relay: m('bareRelay') / m('bare'),
    credStage: m('bare') / m('bareNoCred'),
    credStageMs: m('bare') - m('bareNoCred'),
    brokerVsNone: m('run') / m('none'),
    ...(options.agents ? { claude: m('claudeRun') / m('claudeHand') } : {}),
  };
  const ends = endsToExit(r, id, since);
  const procs = processesOf(bin('agent-sandbox'), ['run', ...flags(root, id), '--agent-bin', 'true', '--']);
  const bareProcs = processesOf(argv.withRelay[0], argv.withRelay.slice(1));
  report(r, ratios, ends, procs, bareProcs);
  if (options.versus) reportVersus(r);
  return { ...r, ratios, endToExit: ends, processes: { launcher: procs, bare: bareProcs } };
}
