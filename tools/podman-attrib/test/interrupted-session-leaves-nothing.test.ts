// The launcher (a real process running runAttributedSession) is interrupted or
// crashes mid-run: the container is removed, the attribution is still written
// when the process lives to write it, and no container, cgroup or cidfile is left.
import t from 'tap';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { runPodman } from '@agent-sandbox/shared/podman';
import { PodmanAttribOutput } from '@agent-sandbox/shared/validators/podman-attrib';
import { containerName, tempDir } from '@agent-sandbox/testkit';
import { busybox, hardening, leftovers, nothingLeft, sessionId } from './fixtures/session-kit.js';

const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'session-driver.mjs');

async function untilRunning(name: string): Promise<void> {
  for (let i = 0; i < 150; i += 1) {
    const out = await runPodman(['ps', '--filter', `name=^${name}$`, '--filter', 'status=running', '--format', '{{.Names}}']);
    if (out.stdout.trim() === name) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} never ran`);
}

interface Row {
  claim: string;
  label: string;
  signal?: 'SIGTERM' | 'SIGINT';
  mode: 'normal' | 'crash';
  command: string[];
  driverExit: number;
  /** The container's status after the stop (143 when it handles TERM, 137 when podman stop had to kill it). */
  containerExit?: number;
}

const rows: Row[] = [
  {
    claim: 'SIGTERM to the launcher mid-run removes the container and still writes the attribution',
    label: 'term',
    signal: 'SIGTERM',
    mode: 'normal',
    command: ['sh', '-c', 'trap "exit 143" TERM; sleep 60 & wait'],
    driverExit: 143,
    containerExit: 143,
  },
  {
    claim: 'SIGINT to the launcher mid-run, with a container that ignores SIGTERM, is killed after the stop timeout and attributed',
    label: 'int',
    signal: 'SIGINT',
    mode: 'normal',
    command: ['sleep', '60'],
    driverExit: 130,
    containerExit: 137,
  },
  {
    claim: 'a launcher crash mid-run still removes the container, the cgroup and the cidfile (exit handler)',
    label: 'crash',
    mode: 'crash',
    command: ['sleep', '60'],
    driverExit: 1,
  },
];

let ran = 0;
for (const row of rows) {
  t.test(row.claim, async (t) => {
    const id = sessionId(t, row.label);
    const name = containerName(t, row.label);
    const dir = await tempDir(t, 'podman-attrib-int-');
    const resultFile = path.join(dir, 'result.json');
    const child = execa('node', [driver, id, name, resultFile, row.mode, '--', ...hardening, busybox, ...row.command], { reject: false });
    await untilRunning(name);
    const began = Date.now();
    if (row.signal) child.kill(row.signal);
    const done = await child;
    t.equal(done.exitCode, row.driverExit, `the driver exits ${row.driverExit} (stderr: ${String(done.stderr).trim().split('\n').pop()})`);
    t.ok(Date.now() - began < 20_000, 'the session ended promptly, not when sleep 60 would have');
    if (row.containerExit !== undefined) {
      const out = JSON.parse(readFileSync(resultFile, 'utf8'));
      t.doesNotThrow(() => validateDocument(PodmanAttribOutput, out, 'result'), 'the result file matches the schema');
      t.equal(out.reason, 'signal');
      t.equal(out.exitCode, row.containerExit);
      t.equal(out.evidence.interrupted, row.signal, 'the evidence says the launcher was interrupted');
      t.equal(done.stdout, '', 'nothing went to stdout');
    } else {
      t.match(String(done.stderr), /launcher crash \(deliberate, test\)/, 'the driver really crashed');
      t.notOk(existsSync(resultFile), 'no result file after a crash');
    }
    t.same(await leftovers(id, name), nothingLeft, 'no container, cgroup or cidfile is left');
    ran += 1;
  });
}

t.test('every row ran', async (t) => t.equal(ran, rows.length));
