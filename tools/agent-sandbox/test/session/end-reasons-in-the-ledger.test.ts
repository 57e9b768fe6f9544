// Each row is one way a real session ends, run through the launcher itself (`agent-sandbox
// run`: the one session driver). The ledger line's reason must be the true one, the agent's
// status passes through unchanged, and nothing may be left behind. On cgroup v1 the kernel log
// is the evidence for OOM and pids kills; on v2 the parent cgroup's own counters are.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { validateDocument, cgroupMode } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { LedgerLine } from '@agent-sandbox/shared/validators/agent-sandbox';
import { sessionNeeds, nothingLeft, sessionFixture, type SessionFixture } from '../fixtures/session-fixture.js';

/** Root (the workspace is uid 1000's), podman, and the images these sessions run: a skip names what is missing. */
const requirements = sessionNeeds({ images: ['localhost/agent-sandbox:latest'] });

const image = 'localhost/agent-sandbox:latest';
const v2 = cgroupMode() === 'v2';
// Where a kill is read from: the kernel log when it is readable (root), else the counters (v2
// rootless: the parent's memory.events counts its descendants' OOM kills; a rejected fork is
// counted in the container's own pids.events, watched while it runs). On v1 rootless is refused.
const rootful = process.geteuid?.() === 0;
/** How the kernel names the session's parent: a path with cgroupfs, a slice with systemd (dashes escaped). */
const parentPattern = (label: string) =>
  v2 ? `/agent_sandbox\\.slice/agent_sandbox-astest\\\\x2d${label}\\\\x2d[0-9a-f]+\\.slice` : `/agent-sandbox/astest-${label}-[0-9a-f]+`;

interface Row {
  claim: string;
  label: string;
  flags: string[];
  script: string;
  meanwhile?: (fx: SessionFixture) => Promise<void>;
  /** The status the container ended with; several when the stop can land before or after the agent's own signal handling. */
  exitCode: number | number[];
  reason: string;
  check?: (t: Test, line: any, ms: number, fx: SessionFixture) => void | Promise<void>;
}

async function running(name: string): Promise<boolean> {
  const out = await runPodman(['ps', '--filter', `name=^${name}$`, '--filter', 'status=running', '--format', '{{.Names}}'], {
    expect: 'any',
  });
  return out.stdout.trim() === name;
}

/** Until podman reports the container running (a minute at most: the VM tier's guest is slow). */
async function untilRunning(name: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    if (await running(name)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} never ran`);
}

const rows: Row[] = [
  {
    claim: 'a memory bomb is oom-killed: exit 137 and the ledger says oom-killed, with the evidence naming our cgroup',
    label: 'oom',
    flags: ['--memory', '96m'],
    script: 'a=x; while true; do a="$a$a"; done',
    exitCode: 137,
    reason: 'oom-killed',
    check: (t, line) => {
      t.match(
        line.evidence.basis,
        rootful
          ? new RegExp(`^kernel log: oom-kill:.*oom_memcg=${parentPattern('oom')}/libpod-[0-9a-f]{64}`)
          : /^cgroup counter memory\.events:oom_kill = [1-9]/,
      );
      t.ok(line.peak.memoryBytes >= 90 * 1024 * 1024, `the peak (${line.peak.memoryBytes}) is at the 96m limit`);
    },
  },
  {
    claim: 'a fork bomb under --pids is pids-limit in the ledger, and its peak is at the limit',
    label: 'forkbomb',
    flags: ['--pids', '32'],
    // exec, not a child: once the bomb holds every pid, the shell cannot fork a `sleep` (dash then
    // says "Cannot fork" and exits 2), but it can become one.
    script: 'f() { f | f & }; f; exec sleep 2',
    exitCode: 0,
    reason: 'pids-limit',
    check: (t, line) => {
      t.match(
        line.evidence.basis,
        rootful
          ? new RegExp(`^kernel log: cgroup: fork rejected by pids controller in ${parentPattern('forkbomb')}/libpod-`)
          : /^cgroup counter pids\.events:max = [1-9]/,
      );
      t.ok(line.peak.pids >= 28 && line.peak.pids <= 33, `peak pids ${line.peak.pids} is at the limit 32`);
    },
  },
  {
    claim: '`exit 3` is exited with 3',
    label: 'exit3',
    flags: [],
    script: 'exit 3',
    exitCode: 3,
    reason: 'exited',
    check: (t, line) => t.equal(line.evidence.basis, 'exit status 3'),
  },
  {
    claim: 'a session killed from outside with SIGKILL is signal, exit 137',
    label: 'sigkill',
    flags: [],
    script: 'sleep 60',
    meanwhile: async (fx) => {
      await untilRunning(`agent-sandbox-${fx.id}`);
      await runPodman(['kill', '--signal', 'KILL', `agent-sandbox-${fx.id}`], { expect: 'any' });
    },
    exitCode: 137,
    reason: 'signal',
  },
  {
    claim: "--timeout stops a session that runs on: the ledger says timeout, long before the agent's own end",
    label: 'timeout',
    flags: ['--timeout', '3s'],
    script: 'trap "" TERM; sleep 600',
    // 137 when the 3 s grace ran out on the ignored TERM; 143 when a loaded host started the
    // agent so late that TERM came before its trap. Either is the container's own status.
    exitCode: [137, 143],
    reason: 'timeout',
    check: (t, line, ms) => {
      // Not a speed figure (those are the bench's): the launcher ended it, not the agent's own 600 s.
      t.ok(ms < 300_000, `the launcher stopped it after ${ms} ms, long before the agent's own end`);
      t.equal(line.limits.timeout, '3s', 'the ledger states the declared timeout');
      t.equal(line.evidence.stopped, 'timeout');
    },
  },
  {
    claim:
      'a writer with no end under --disk is stopped: disk-limit, and what it left on the disk (du, after the session) is over the ceiling by less than the measured overshoot',
    label: 'disk',
    flags: ['--disk', '128m'],
    script: 'trap "" TERM; dd if=/dev/zero of=/sandbox/workspaces/$AGENT_SANDBOX_SESSION/fill bs=1M 2>/dev/null; sleep 60',
    exitCode: 137,
    reason: 'disk-limit',
    check: async (t, line, _ms, fx) => {
      // Measured here, from the world: what the session's workspace and home hold now that it is over.
      const dirs = [fx.workspace, path.join(fx.root, 'homes', fx.id)].filter((d) => existsSync(d));
      const du = await execa('du', ['-s', '--block-size=1', ...dirs]);
      const onDisk = String(du.stdout)
        .split('\n')
        .reduce((sum, l) => sum + Number(l.split('\t')[0]), 0);
      t.ok(onDisk > 128 * 1024 * 1024, `du: the session left ${onDisk} bytes, over the 128m ceiling (the writer ran into it)`);
      t.ok(
        onDisk < 1024 * 1024 * 1024,
        `and it was stopped before 1 GiB (overshoot ${Math.round((onDisk - 128 * 1024 * 1024) / 1048576)} MiB by du)`,
      );
      const written = line.evidence.disk.writtenBytes;
      t.ok(
        written > 128 * 1024 * 1024 && written <= onDisk,
        `the ledger's writtenBytes (${written}) is over the ceiling and no more than du found`,
      );
      t.equal(line.evidence.disk.mechanism, 'watchdog');
    },
  },
  {
    // Issue 32, finding 8: hard links cost no inode and no byte, so only a walk's count of names
    // sees them. The control is the world's: `find` counts each link, `du --inodes` and statfs do not.
    claim: 'hard links past the file ceiling, made by a session that exits at once, end it disk-limit: names are counted, not inodes',
    label: 'links',
    flags: ['--disk', '64m'],
    script: `cd /sandbox/workspaces/$AGENT_SANDBOX_SESSION && node -e "const fs = require('fs'); fs.writeFileSync('f', ''); fs.mkdirSync('l'); for (let i = 0; i < 6000; i++) fs.linkSync('f', 'l/' + i)"`,
    exitCode: [0, 137],
    reason: 'disk-limit',
    check: async (t, line, _ms, fx) => {
      t.match(line.evidence.disk, { exceeded: 'files', limitFiles: 4096 }, 'the ceiling passed is the names one: one per 16 KiB of 64m');
      t.ok(line.evidence.disk.writtenFiles > 4096, `the names written: ${line.evidence.disk.writtenFiles}`);
      if (existsSync(path.join(fx.workspace, 'l'))) {
        const inodes = Number(String((await execa('du', ['--inodes', '-s', path.join(fx.workspace, 'l')])).stdout).split('\t')[0]);
        t.ok(inodes < 10, `the control: du --inodes sees ${inodes} inodes in the links' directory`);
      }
    },
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, requirements, async (t) => {
    const fx = await sessionFixture(t, row.label);
    const began = Date.now();
    const flags = fx.flags.filter((f, i, all) => f !== '--agent-bin' && all[i - 1] !== '--agent-bin');
    const running = fx.run(['run', ...flags, '--image', image, '--agent-bin', '/bin/sh', ...row.flags, '--', '-c', row.script], {
      timeoutMs: 180_000,
    });
    await row.meanwhile?.(fx);
    const out = await running;
    const ms = Date.now() - began;
    const statuses = Array.isArray(row.exitCode) ? row.exitCode : [row.exitCode];
    t.ok(
      statuses.includes(out.exitCode!),
      `the status passes through: ${out.exitCode} (stderr: ${out.stderr.trim().split('\n').slice(-3).join(' | ')})`,
    );
    const lines = fx.ledgerLines();
    t.equal(lines.length, 1, 'one ledger line');
    t.doesNotThrow(() => validateDocument(LedgerLine, lines[0], 'ledger'), 'it matches the ledger schema');
    t.match(lines[0], { outcome: 'ran', exitCode: out.exitCode, reason: row.reason });
    await row.check?.(t, lines[0], ms, fx);
    t.same(await fx.leftovers(), nothingLeft, 'no container, staged or installed copy, lock, record or cgroup is left');
    ran += 1;
  });
}

t.test('every row ran', requirements, async (t) => t.equal(ran, rows.length));
