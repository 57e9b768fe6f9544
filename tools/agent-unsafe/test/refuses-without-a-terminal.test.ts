// The hatch never starts without a TTY on both stdin and stdout: exit 90, the
// reason on stdout as JSON, and the stub agent never ran. Run in the host-like
// root, so "no TTY" is the only reason there is.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { findRefusal } from './fixtures/hatch-env.js';
import { makeHatchEnv, ranLines, runInHostLikeRoot, binDir } from './fixtures/hatch-env.js';
import { needs } from '@agent-sandbox/testkit';

// The host-like root is made with unshare and chroot: root only, reported as a skip elsewhere.
const hostLike = needs({ root: true, commands: ['unshare', 'chroot'] });

const rows = [
  { claim: 'plain pipes on stdin and stdout', command: `${binDir}/cdx-unsafe`, pty: false, evidence: 'stdin and stdout not a terminal' },
  {
    claim: 'stdin from /dev/null under a real PTY',
    command: `${binDir}/cld-unsafe </dev/null`,
    pty: true,
    evidence: 'stdin not a terminal',
  },
  { claim: 'stdout to a file under a real PTY', command: `${binDir}/ca-unsafe >STDOUT`, pty: true, evidence: 'stdout not a terminal' },
  {
    claim: 'a dry run without a terminal',
    command: `${binDir}/agent-unsafe codex --dry-run`,
    pty: false,
    evidence: 'stdin and stdout not a terminal',
  },
];
let ran = 0;
for (const row of rows) {
  t.test(`refuses (90) with ${row.claim}; the agent never runs`, hostLike, async (t) => {
    ran += 1;
    const hatch = await makeHatchEnv(t);
    const stdoutFile = `${hatch.dir}/stdout`;
    const result = await runInHostLikeRoot(t, row.command.replace('STDOUT', stdoutFile), hatch, { pty: row.pty });
    if (row.command.includes('STDOUT')) result.refusal = findRefusal(await readFile(stdoutFile, 'utf8'));
    t.equal(result.exitCode, 90, 'exit 90', { output: result.output });
    t.equal(result.refusal?.error?.code, 'no-tty');
    t.same(result.refusal?.error?.reasons, [{ code: 'no-tty', evidence: row.evidence }], 'no-tty is the only reason');
    t.same(await ranLines(hatch), [], 'the stub agent never ran');
    t.notMatch(result.output, /UNCONTAINED SESSION/, 'no banner: nothing was launched');
  });
}
t.test('every row ran', hostLike, async (t) => t.equal(ran, rows.length));

t.test('the no-TTY refusal on this machine names the container too (its root has /.dockerenv)', hostLike, async (t) => {
  const { runBin } = await import('@agent-sandbox/testkit');
  const hatch = await makeHatchEnv(t);
  const result = await runBin('agent-unsafe', ['codex'], { env: { PATH: hatch.path } });
  t.equal(result.exitCode, 90);
  t.equal(result.json?.error?.code, 'no-tty');
  t.ok(
    result.json?.error?.reasons.some((r: any) => r.code === 'container-environment'),
    'the container reason is listed as well',
  );
  t.same(await ranLines(hatch), []);
});
