// Which certificate variables ADD to the roots the pinned CLIs trust and which REPLACE them:
// why --ca-file sets NODE_EXTRA_CA_CERTS and CODEX_CA_CERTIFICATE and never SSL_CERT_FILE.
// Two CAs made for the run: B signs the model server's certificate for api.openai.com and
// api.anthropic.com (TLS on 127.0.0.1:443 in a namespace of its own, which the container joins,
// the names pointed there with --add-host); A signs nothing the server uses. "The image's roots
// hold B" is the image's /etc/ssl/certs/ca-certificates.crt with B appended, mounted over it:
// a CLI that then still reaches the server with a variable naming only A kept the system roots
// (the variable adds); one that fails dropped them (the variable replaces).
// Measured with codex-cli 0.171.0 and Claude Code 2.1.197 (podman directly: the launcher cannot
// replace the image's bundle, and that is the point of the measurement).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runPodman } from '@agent-sandbox/shared/podman';
import { makeTestCa, startModelServer, tempDir } from '@agent-sandbox/testkit';
import { readFileSync } from 'node:fs';
import { agentArgs, agentsImage, demoDir, ensureAgentsImage, type RealRuntime } from './fixtures/real-agent-session.js';

interface Row {
  runtime: RealRuntime;
  label: string;
  env: Record<string, string>;
  bundleHoldsB: boolean;
  reached: boolean;
}
const variable: Record<RealRuntime, string> = { codex: 'CODEX_CA_CERTIFICATE', claude: 'NODE_EXTRA_CA_CERTS' };
const rows: Row[] = (['codex', 'claude'] as const).flatMap((runtime): Row[] => [
  { runtime, label: 'SSL_CERT_FILE naming B is trusted', env: { SSL_CERT_FILE: '/m/b/ca.crt' }, bundleHoldsB: false, reached: true },
  {
    runtime,
    label: `${variable[runtime]} naming A keeps the image's roots (it adds)`,
    env: { [variable[runtime]]: '/m/a/ca.crt' },
    bundleHoldsB: true,
    reached: true,
  },
  {
    runtime,
    label: "SSL_CERT_FILE naming A drops the image's roots (it replaces)",
    env: { SSL_CERT_FILE: '/m/a/ca.crt' },
    bundleHoldsB: true,
    reached: false,
  },
]);

/** This machine lacks CAP_SYS_RESOURCE: podman's default rlimits fail (docs/design.md). */
const ulimits = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
const dir = await tempDir(t, 'astest-trust-');
let cert: { certFile: string; keyFile: string };
t.before(async () => {
  await ensureAgentsImage();
  await chmod(dir, 0o755);
  await mkdir(path.join(dir, 'a'));
  await mkdir(path.join(dir, 'b'));
  await makeTestCa(path.join(dir, 'a'), []);
  const caB = await makeTestCa(path.join(dir, 'b'), []);
  cert = await caB.issue(['api.openai.com', 'api.anthropic.com']);
  const image = await runPodman(['run', '--rm', ...ulimits, '--network', 'none', agentsImage, 'cat', '/etc/ssl/certs/ca-certificates.crt']);
  await writeFile(path.join(dir, 'bundle-with-b.crt'), `${image.stdout.trimEnd()}\n${caB.certPem}`);
});
let ran = 0;

for (const row of rows) {
  t.test(`${row.runtime}: ${row.label}`, async (t) => {
    const run = path.join(dir, `run-${ran}`);
    await mkdir(path.join(run, 'home', '.codex'), { recursive: true });
    const server = await startModelServer(t, { steps: [{ say: 'done' }], expectedToken: 'sk-trust', dir: run, port: 443, tls: cert });
    await writeFile(path.join(run, 'home', '.codex', 'config.toml'), readFileSync(path.join(demoDir, 'codex-config.toml')));
    await writeFile(path.join(run, 'home', '.codex', 'auth.json'), JSON.stringify({ auth_mode: 'apikey', OPENAI_API_KEY: 'sk-trust' }));
    await chown(path.join(run, 'home'), 1000, 1000);
    await chown(path.join(run, 'home', '.codex'), 1000, 1000);
    await chown(path.join(run, 'home', '.codex', 'auth.json'), 1000, 1000);
    const name = `astest-trust-${randomBytes(3).toString('hex')}`;
    t.teardown(() => runPodman(['rm', '--force', '--ignore', '--time', '0', name], { expect: 'any' }));
    const env = { ...row.env, ...(row.runtime === 'claude' ? { ANTHROPIC_API_KEY: 'sk-trust' } : { CODEX_HOME: '/sandbox/home/.codex' }) };
    const out = await runPodman(
      [
        'run',
        '--rm',
        '--name',
        name,
        ...ulimits,
        '--network',
        server.network,
        '--add-host',
        'api.openai.com:127.0.0.1',
        '--add-host',
        'api.anthropic.com:127.0.0.1',
        '--user',
        '1000:1000',
        '--cap-drop',
        'ALL',
        '-v',
        `${dir}:/m:ro`,
        '-v',
        `${path.join(run, 'home')}:/sandbox/home`,
        ...(row.bundleHoldsB ? ['-v', `${path.join(dir, 'bundle-with-b.crt')}:/etc/ssl/certs/ca-certificates.crt:ro`] : []),
        ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
        agentsImage,
        'timeout',
        '25',
        row.runtime,
        ...agentArgs(row.runtime, 'say done'),
      ],
      { expect: 'any', timeoutMs: 90_000 },
    );
    const served = (await server.requests()).filter((r) => r.api === 'responses' || r.api === 'messages');
    t.comment(`exit ${out.exitCode}, ${served.length} model requests`);
    t.equal(served.length > 0, row.reached, row.reached ? 'the CLI verified the server and reached it' : 'the CLI reached nothing');
    t.equal(out.exitCode === 0, row.reached, `exit ${out.exitCode}`);
    ran++;
  });
}

t.test('every row ran', async (t) => {
  t.equal(ran, rows.length, `${ran} of ${rows.length}`);
});
