// The preflight the handoff needs: linger, XDG_RUNTIME_DIR=/run/user/<uid> present and
// owned, its bus a socket. On this machine (no user manager) the refusal is real.
import t from 'tap';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { execa } from 'execa';
import { binPath, tempDir, type Teardown } from '@agent-sandbox/testkit';
import { checkUserManager, realDeps } from '../dist/index.js';

t.test('on this machine the handoff is refused with 84 naming loginctl enable-linger, and the command never runs', async (t) => {
  const marker = `${await tempDir(t)}/ran`;
  const r = await execa('setpriv', ['--no-new-privs', binPath('nnp-probe'), 'exec', '--', 'touch', marker], {
    reject: false,
    stdin: 'ignore',
  });
  t.equal(r.exitCode, 84);
  const doc = JSON.parse(r.stdout);
  t.equal(doc.ok, false);
  t.equal(doc.error.code, 'user-manager-missing');
  t.match(doc.error.message, 'loginctl enable-linger');
  t.match(r.stderr, 'loginctl enable-linger', 'the human on stderr is told the remedy too');
  t.ok(doc.error.problems.length >= 3, 'linger, runtime dir and bus are each named');
  await t.rejects(
    import('node:fs/promises').then((fs) => fs.readFile(marker)),
    { code: 'ENOENT' },
  );
});

t.test('the probe reports the same preflight without refusing (exit 0, ready false)', async (t) => {
  const r = await execa(binPath('nnp-probe'), [], { reject: false, stdin: 'ignore' });
  t.equal(r.exitCode, 0);
  const um = JSON.parse(r.stdout).userManager;
  t.equal(um.ready, false);
  t.equal(um.linger, false);
  t.equal(um.bus.socket, false);
});

/** A passing layout under a temp root; each row breaks one thing. */
async function layout(t: Teardown) {
  const base = await tempDir(t, 'nnp-probe-preflight-');
  const { uid, username } = userInfo();
  const dir = `${base}/run/${uid}`;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await mkdir(`${base}/linger`);
  await writeFile(`${base}/linger/${username}`, '');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(`${dir}/bus`, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const deps = realDeps({
    runtimeRoot: `${base}/run`,
    lingerDir: `${base}/linger`,
    env: { PATH: process.env['PATH'], XDG_RUNTIME_DIR: dir },
  });
  return { base, dir, deps, username, uid };
}

interface Row {
  claim: string;
  breakIt: (l: Awaited<ReturnType<typeof layout>>) => Promise<void>;
  version?: number | null;
  problem: RegExp | null;
  /** How many problems follow from the one break (default 1). */
  count?: number;
}

const rows: Row[] = [
  { claim: 'all present: ready', breakIt: async () => undefined, problem: null },
  {
    claim: 'no linger flag and no logind: not ready',
    breakIt: async (l) => rm(`${l.base}/linger/${l.username}`),
    problem: /^linger is off/,
  },
  {
    claim: 'XDG_RUNTIME_DIR unset: not ready',
    breakIt: async (l) => void delete l.deps.env['XDG_RUNTIME_DIR'],
    problem: /XDG_RUNTIME_DIR is unset, expected/,
  },
  {
    claim: 'XDG_RUNTIME_DIR elsewhere: not ready',
    breakIt: async (l) => void (l.deps.env['XDG_RUNTIME_DIR'] = '/tmp'),
    problem: /XDG_RUNTIME_DIR is "\/tmp", expected/,
  },
  {
    claim: 'runtime dir owned by another uid: not ready',
    breakIt: async (l) => chown(l.dir, 65534, 65534),
    problem: /is owned by uid 65534/,
  },
  {
    claim: 'bus is a regular file, not a socket: not ready',
    breakIt: async (l) => {
      await rm(`${l.dir}/bus`, { force: true });
      await writeFile(`${l.dir}/bus`, '');
    },
    problem: /bus is not a socket/,
  },
  {
    claim: 'runtime dir missing: not ready (and so is its bus)',
    breakIt: async (l) => rm(l.dir, { recursive: true, force: true }),
    problem: /does not exist/,
    count: 2,
  },
  { claim: 'systemd-run absent: not ready', breakIt: async () => undefined, version: null, problem: /systemd-run is not installed/ },
];

t.test('each preflight check refuses on its own and names itself', async (t) => {
  let ran = 0;
  for (const row of rows) {
    await t.test(row.claim, async (t) => {
      const l = await layout(t);
      await row.breakIt(l);
      const report = await checkUserManager(l.deps, row.version === undefined ? 252 : row.version);
      if (row.problem === null) {
        t.equal(report.ready, true, report.problems.join('; '));
        t.same(report.problems, []);
        t.equal(report.lingerSource, 'linger-file');
      } else {
        t.equal(report.ready, false);
        t.equal(report.problems.length, row.count ?? 1, report.problems.join('; '));
        t.match(report.problems[0], row.problem);
      }
      ran += 1;
    });
  }
  t.equal(ran, rows.length, 'every row ran');
});
