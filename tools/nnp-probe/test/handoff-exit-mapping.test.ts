// The handoff under a real NoNewPrivs 1 (setpriv), with a systemd-run STAND-IN on
// PATH because no user manager runs here: the contained command's status passes
// through unchanged, and only a failure of systemd-run itself becomes 89.
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import { handoffEnv, runDriver } from './fixtures/handoff-env.js';

interface Row {
  claim: string;
  command: string[];
  status: number;
  fail?: 'bus';
  code?: string;
}

const rows: Row[] = [
  { claim: 'contained exit 0 passes through (stand-in systemd-run)', command: ['true'], status: 0 },
  {
    claim: 'contained exit 1 passes through, though systemd-run also uses 1 for itself (stand-in)',
    command: ['sh', '-c', 'exit 1'],
    status: 1,
  },
  { claim: 'contained exit 3 passes through (stand-in systemd-run)', command: ['sh', '-c', 'exit 3'], status: 3 },
  { claim: 'contained SIGKILL (137) passes through (stand-in systemd-run)', command: ['sh', '-c', 'kill -9 $$'], status: 137 },
  { claim: 'contained exit 89 passes through unrewritten (stand-in systemd-run)', command: ['sh', '-c', 'exit 89'], status: 89 },
  {
    claim: "a command not found in the unit is 127, the command's status (stand-in systemd-run)",
    command: ['no-such-command-nnp'],
    status: 127,
  },
  {
    claim: 'systemd-run failing itself exits 89 (stand-in: no user bus)',
    command: ['true'],
    status: 89,
    fail: 'bus',
    code: 'systemd-run-failed',
  },
];

t.test('exit mapping, row by row', async (t) => {
  let ran = 0;
  for (const row of rows) {
    await t.test(row.claim, async (t) => {
      const h = await handoffEnv(t);
      const r = await runDriver(h.env, row.command, row.fail ? { NNP_STANDIN_FAIL: row.fail } : {});
      t.equal(r.exitCode, row.status, String(r.stderr));
      const argv = JSON.parse(await readFile(`${h.state}/argv.json`, 'utf8'));
      t.equal(argv[0], 'systemd-run', 'the handoff went through systemd-run');
      if (row.code) {
        t.match(r.stderr, `"code":"${row.code}"`);
        t.match(r.stderr, /Failed to connect to bus/, "systemd-run's own message reaches stderr");
      } else {
        t.notMatch(r.stderr, 'DRIVER-ERROR', "no tool error: the status is the command's");
      }
      t.same(await readdir(h.runtimeDir), ['bus'], 'the status directory is removed afterwards');
      ran += 1;
    });
  }
  t.equal(ran, rows.length, 'every row ran');
});

t.test('the handoff argv is pinned: flags, unit name, explicit PATH and HOME (stand-in systemd-run)', async (t) => {
  const h = await handoffEnv(t);
  const r = await runDriver(h.env, ['sh', '-c', 'echo "PATH=$PATH HOME=$HOME"; grep NoNewPrivs /proc/self/status']);
  t.equal(r.exitCode, 0, String(r.stderr));
  const argv: string[] = JSON.parse(await readFile(`${h.state}/argv.json`, 'utf8'));
  t.same(argv.slice(0, 6), ['systemd-run', '--user', '--pipe', '--wait', '--collect', '--quiet']);
  t.match(argv[6], /^--unit=agent-sandbox-nnp-[0-9a-f]{16}\.service$/);
  t.equal(argv[7], '--same-dir');
  t.equal(argv[8], `--setenv=PATH=${h.env['PATH']}`);
  t.equal(argv[9], `--setenv=HOME=${h.env['HOME']}`);
  t.equal(argv[10], '--');
  t.match(r.stdout, `PATH=${h.env['PATH']} HOME=${h.env['HOME']}`, 'the unit saw exactly the PATH and HOME we passed');
});

const literal = ['$HOME', '${PATH}', '$$', 'a$b', 'cost: $5', '$'];

t.test('every literal $ arrives unexpanded on systemd 252: escaped as $$ (stand-in expands like the manager)', async (t) => {
  const h = await handoffEnv(t, 252);
  const r = await runDriver(h.env, ['printf', '[%s]', ...literal]);
  t.equal(r.exitCode, 0, String(r.stderr));
  t.equal(r.stdout, literal.map((s) => `[${s}]`).join(''));
  const argv: string[] = JSON.parse(await readFile(`${h.state}/argv.json`, 'utf8'));
  t.notOk(argv.includes('--expand-environment=no'), '252 has no --expand-environment');
  t.same(
    argv.slice(-literal.length),
    literal.map((s) => s.replace(/\$/g, '$$$$')),
  );
});

t.test('every literal $ arrives unexpanded on systemd 254: --expand-environment=no, no escaping (stand-in)', async (t) => {
  const h = await handoffEnv(t, 254);
  const r = await runDriver(h.env, ['printf', '[%s]', ...literal]);
  t.equal(r.exitCode, 0, String(r.stderr));
  t.equal(r.stdout, literal.map((s) => `[${s}]`).join(''));
  const argv: string[] = JSON.parse(await readFile(`${h.state}/argv.json`, 'utf8'));
  t.ok(argv.includes('--expand-environment=no'));
  t.same(argv.slice(-literal.length), literal, 'the command is passed as given');
});

t.test('the stand-in would expand an unescaped $HOME: the escaping test can fail (stand-in self-check)', async (t) => {
  const h = await handoffEnv(t, 252);
  const { execa } = await import('execa');
  const r = await execa(
    'systemd-run',
    ['--user', '--pipe', '--wait', '--unit=x.service', `--setenv=HOME=/h`, '--', 'printf', '[%s]', '$HOME'],
    {
      env: h.env,
      extendEnv: false,
      reject: false,
    },
  );
  t.equal(r.stdout, '[/h]');
});
