#!/usr/bin/env node
// Every skipped test in a TAP stream, with its reason, judged against what the tier's machine
// lacks. The rule: a test may skip only where its machine really lacks what it needs (root or
// not, a cgroup version, a user manager, a kernel entry). Each tier states below what its
// machine lacks; a skip whose reason names none of that fails CI: an image, a command or
// podman missing on a CI machine (setup.sh installs them all), root wanted on a root tier, or
// any reason the table does not know (a new skip is added here, with the gap it stands for).
//   node scripts/skips.mjs TIER FILE    TIER: host | vm-root | vm-user; FILE: TAP, or a log holding it
// Prints every skip, then exits 1 when one is unexpected on TIER. vm/suite.mjs uses the same
// functions for the guest's TAP.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { Parser } from 'tap-parser';

export const tiers = ['host', 'vm-root', 'vm-user'];

/**
 * What each tier's machine lacks, as the skip reasons of our tests name it. host: root, cgroup
 * v1 hybrid, no systemd (these build machines). vm-root and vm-user: the Debian 12 guest,
 * systemd and cgroup v2, as root and as uid 1000 with linger.
 */
export const gaps = [
  { lacks: 'a non-root user with a live systemd user manager', reason: /^needs a live systemd user manager/, tiers: ['host', 'vm-root'] },
  { lacks: 'a non-root user', reason: /^needs a non-root user/, tiers: ['host', 'vm-root'] },
  { lacks: 'root', reason: /^needs root( \(|$)/, tiers: ['vm-user'] },
  { lacks: 'root on a systemd host', reason: /^needs root on a systemd host/, tiers: ['host', 'vm-user'] },
  { lacks: 'root (the kernel log needs CAP_SYSLOG)', reason: /^(not root here|the kernel log needs CAP_SYSLOG)/, tiers: ['vm-user'] },
  { lacks: 'cgroup v1', reason: /^needs cgroup v1 \(this host is cgroup v2\)$/, tiers: ['vm-root', 'vm-user'] },
  { lacks: 'cgroup v2', reason: /^needs cgroup v2 \(this host is cgroup v1\)$/, tiers: ['host'] },
  { lacks: 'a systemd user manager for this uid', reason: /^needs a systemd user manager for uid \d+$/, tiers: ['host', 'vm-root'] },
  { lacks: 'cgroupfs session parents (systemd makes slices)', reason: /^systemd host: session parents are slices/, tiers: ['vm-root'] },
  { lacks: 'a user with no user manager (this one has one)', reason: /^this user has a user manager/, tiers: ['vm-user'] },
  // Not a gap of the machine: rows whose claim does not depend on the cgroup version, the OCI
  // runtime or systemd, which the host tier proves as root on the same code, left out of the
  // guest's run under CPU emulation (test/proofs/escape-attempts.test.ts).
  {
    lacks: 'nothing: the host tier proves the row on the same code path',
    reason: /^proved on the host tier; the same code path/,
    tiers: ['vm-root', 'vm-user'],
  },
  // A rootless launcher (vm-user): the escape suite's rows whose plant or control needs root, and
  // its rows whose host side runs as root (the host tier proves them as root on the same code).
  {
    lacks: 'root, to plant a setuid-root binary and run it as uid 1000 (the launcher is rootless)',
    reason: /^rootless launcher: the setuid-root plant and its control need root/,
    tiers: ['vm-user'],
  },
  {
    lacks: "root, for the kernel log row's control (CAP_SYSLOG of the initial user namespace)",
    reason: /^rootless launcher: its control needs root \(syslog\(2\) asks for CAP_SYSLOG/,
    tiers: ['vm-user'],
  },
  {
    lacks: 'root, for the host side of the git, store, link, naming, user-tools and flood rows (the host tier proves them)',
    reason: /^rootless launcher: the git, git store, planted-link, naming, user-tools and flood rows are run as root only/,
    tiers: ['vm-user'],
  },
  { lacks: "the kernel's i386 syscall entry", reason: /^this kernel has no i386 syscall entry/, tiers },
];

/** The TAP in a log: from tap's version line on (a CI log has the build and lint before it). */
function tapPart(text) {
  const start = text.search(/^TAP version \d+$/m);
  return start < 0 ? '' : text.slice(start);
}

/**
 * Every skip in the stream: a skipped subtest or assertion, at any depth, as
 * {file, title, reason} (file: the top-level point, a test file under tap's runner).
 */
export function skipsOf(text) {
  const found = [];
  const watch = (parser, path) => {
    parser.on('child', (child) => watch(child, [...path, child.name ?? '']));
    parser.on('assert', (a) => {
      if (!a.skip) return;
      const names = [...path, a.name];
      found.push({ file: names[0], title: names.slice(1).join(' > ') || names[0], reason: a.skip === true ? '' : String(a.skip) });
    });
  };
  const parser = new Parser();
  watch(parser, []);
  parser.end(tapPart(text));
  return found;
}

/**
 * The needs a reason names: testkit's needs() joins several ("needs root, cgroup v1 (...)"),
 * each is judged on its own; a comma inside parentheses does not split.
 */
function needsOf(reason) {
  if (!reason.startsWith('needs ')) return [reason];
  return reason
    .slice('needs '.length)
    .split(/, (?![^(]*\))/)
    .map((need) => `needs ${need}`);
}

/** Each skip with the gaps that allow it on `tier`; `gap` is undefined when one need is no gap there. */
export function judge(skips, tier) {
  if (!tiers.includes(tier)) throw new Error(`tier must be one of ${tiers.join(', ')}, got ${JSON.stringify(tier)}`);
  return skips.map((s) => {
    const found = needsOf(s.reason).map((need) => gaps.find((g) => g.tiers.includes(tier) && g.reason.test(need))?.lacks);
    return { ...s, gap: found.every(Boolean) ? found.join(', ') : undefined };
  });
}

/** The lines CI prints: every skip with its reason, the unexpected ones marked. */
export function report(judged, tier) {
  const unexpected = judged.filter((s) => !s.gap);
  const lines = [`skips (${tier}): ${judged.length} skipped, ${unexpected.length} unexpected`];
  for (const s of judged) {
    const verdict = s.gap ? `ok: this machine lacks ${s.gap}` : `UNEXPECTED: nothing this machine lacks (scripts/skips.mjs) explains it`;
    lines.push(`  ${s.file}: ${s.title} # SKIP ${s.reason || '(no reason given)'} -- ${verdict}`);
  }
  return { lines, unexpected: unexpected.length };
}

function main([tier, file]) {
  if (!tier || !file) throw new Error('usage: node scripts/skips.mjs host|vm-root|vm-user TAP_OR_LOG_FILE');
  const text = readFileSync(file, 'utf8');
  if (!tapPart(text)) throw new Error(`${file} holds no TAP (no "TAP version" line): the suite did not run`);
  const { lines, unexpected } = report(judge(skipsOf(text), tier), tier);
  for (const line of lines) console.log(line);
  return unexpected === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    console.error(`skips: ${err.message}`);
    process.exitCode = 1;
  }
}
