// The decision is made from the measurement: this process's own NoNewPrivs,
// set for real with `setpriv --no-new-privs`, decides the branch.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { execa } from 'execa';
import { validateDocument } from '@agent-sandbox/shared';
import { NnpProbeOutput } from '@agent-sandbox/shared/validators/nnp-probe';
import { binPath, runBin, tempDir } from '@agent-sandbox/testkit';
import { parseNoNewPrivs } from '../dist/index.js';
import { standinBin } from './fixtures/handoff-env.js';

const bin = binPath('nnp-probe');

function underNnp(args: string[], env: Record<string, string | undefined> = process.env) {
  return execa('setpriv', ['--no-new-privs', bin, ...args], { reject: false, env, extendEnv: false, stdin: 'ignore', timeout: 60_000 });
}

t.test('without no-new-privs the probe reports 0 and no re-exec, and the report matches its schema', async (t) => {
  const own = parseNoNewPrivs(await readFile('/proc/self/status', 'utf8'));
  t.equal(own, false, 'precondition: the test runner itself has NoNewPrivs 0');
  const r = await runBin('nnp-probe');
  t.equal(r.exitCode, 0, r.stderr);
  t.doesNotThrow(() => validateDocument(NnpProbeOutput, r.json, 'output'));
  t.equal(r.json.noNewPrivs, false);
  t.equal(r.json.reexec, false);
  t.same(r.json.argv, []);
  t.equal(r.json.systemdVersion, 252, 'systemd here is 252 (docs/design.md)');
});

t.test('under setpriv --no-new-privs the probe reports 1 and the systemd-run argv', async (t) => {
  const r = await underNnp(['--', 'podman', 'images']);
  t.equal(r.exitCode, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  t.doesNotThrow(() => validateDocument(NnpProbeOutput, doc, 'output'));
  t.equal(doc.noNewPrivs, true);
  t.equal(doc.reexec, true);
  t.same(doc.argv.slice(0, 6), ['systemd-run', '--user', '--pipe', '--wait', '--collect', '--quiet']);
  t.same(doc.argv.slice(-2), ['podman', 'images'], 'the command after -- ends the argv');
});

t.test('without no-new-privs exec runs the command directly, never calling systemd-run', async (t) => {
  const dir = await tempDir(t);
  const env = { ...process.env, PATH: `${standinBin}:${process.env['PATH']}`, NNP_STANDIN_STATE: dir };
  const r = await runBin('nnp-probe', ['exec', '--', 'sh', '-c', 'grep NoNewPrivs /proc/self/status; exit 3'], { env });
  t.equal(r.exitCode, 3, "the command's own status passes through");
  t.match(r.stdout, /^NoNewPrivs:\s+0$/m, 'the command ran with NoNewPrivs 0, as itself');
  await t.rejects(readFile(`${dir}/argv.json`), { code: 'ENOENT' }, 'the systemd-run stand-in was never called');
});

t.test('under no-new-privs exec takes the re-exec path: the real preflight refuses here before running anything', async (t) => {
  const dir = await tempDir(t);
  const marker = `${dir}/ran`;
  const env = { ...process.env, PATH: `${standinBin}:${process.env['PATH']}`, NNP_STANDIN_STATE: dir };
  const r = await underNnp(['exec', '--', 'touch', marker], env);
  t.equal(r.exitCode, 84, r.stderr);
  t.equal(JSON.parse(r.stdout).error.code, 'user-manager-missing');
  await t.rejects(readFile(marker), { code: 'ENOENT' }, 'the command did not run on the direct path');
  await t.rejects(readFile(`${dir}/argv.json`), { code: 'ENOENT' }, 'systemd-run was not started without a user manager');
});

t.test('the NoNewPrivs field is parsed exactly; a status without it cannot be measured', async (t) => {
  const rows: [string, boolean | 'refused'][] = [
    ['Name:\tnode\nNoNewPrivs:\t0\nSeccomp:\t0\n', false],
    ['Name:\tnode\nNoNewPrivs:\t1\nSeccomp:\t2\n', true],
    ['Name:\tnode\nSeccomp:\t0\n', 'refused'],
    ['NoNewPrivs:\t2\n', 'refused'],
    ['XNoNewPrivs:\t1\n', 'refused'],
  ];
  let ran = 0;
  for (const [text, want] of rows) {
    if (want === 'refused') t.throws(() => parseNoNewPrivs(text), { code: 'no-new-privs-unmeasurable', exitCode: 91 });
    else t.equal(parseNoNewPrivs(text), want);
    ran += 1;
  }
  t.equal(ran, rows.length);
});
