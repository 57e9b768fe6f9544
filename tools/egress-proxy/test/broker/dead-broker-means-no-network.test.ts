// A dead broker means no network, never a fallback: the broker (the real CLI, as a process
// of its own) is SIGKILLed in the middle of a session, and the session's next request fails;
// a session whose broker is not there at all gets nothing either.
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile, chmod } from 'node:fs/promises';
import { binPath, imageExists, sessionImage, startFakeInternet, tempDir, until } from '@agent-sandbox/testkit';
import { socketDir, untilBrokerListens } from '../fixtures/broker-session.js';
import { runProbes, type Probe } from '../fixtures/session-container.js';

if (!(await imageExists(sessionImage))) throw new Error(`${sessionImage} is missing: run image/build-all.sh`);
const fi = await startFakeInternet(t, { dir: await tempDir(t, 'astest-fi-') });

// The CLI resolves with the host's resolver only, so the allowlist names the address itself.
const httpsProbe = (label: string): Probe => ({ label, kind: 'https', host: 'api.openai.com', target: `${fi.api.v4}:443` });

t.test('SIGKILL of the broker mid-session: the request before works, the request after fails, nothing else is reached', async (t) => {
  const dir = await socketDir(t, 1000);
  const config = {
    socketPath: `${dir}/egress.sock`,
    sessionId: 'astest-dead',
    allow: [fi.api.v4],
    socketOwner: { uid: 1000, gid: 1000 },
    logPath: `${dir}/egress.jsonl`,
  };
  const broker = execa(binPath('egress-proxy'), ['serve'], { input: JSON.stringify(config), reject: false });
  t.teardown(() => {
    broker.kill('SIGKILL');
    return broker.catch(() => undefined);
  });
  await untilBrokerListens(broker);
  const control = await tempDir(t, 'astest-control-');
  await chmod(control, 0o755);
  let stdoutFile = '';
  const running = runProbes(t, {
    socketDir: dir,
    caFile: fi.ca.certFile,
    controlDir: control,
    label: 'egress-dead',
    onStdout: (file) => (stdoutFile = file),
    probes: [httpsProbe('before'), { label: 'wait', kind: 'waitFor', path: '/control/go' }, httpsProbe('after')],
  });
  await until(
    'the session made its first request',
    () => Boolean(stdoutFile && existsSync(stdoutFile) && readFileSync(stdoutFile, 'utf8').includes('"probe":"before"')),
    20_000,
  );
  const reachedBefore = await fi.connections('api');
  broker.kill('SIGKILL');
  t.equal((await broker).signal, 'SIGKILL', 'the broker is dead');
  await writeFile(`${control}/go`, '');
  const run = await running;
  t.equal(run.exitCode, 0, run.stderr);
  t.match(run.results.get('before'), { ok: true, status: 200, body: { server: 'api' } });
  t.match(run.results.get('after'), { ok: false, code: /^(ECONNRESET|CLOSED|EPIPE)$/ });
  t.equal(await fi.connections('api'), reachedBefore, 'no connection reached the fake internet after the broker died');
  t.match(
    readFileSync(config.logPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l)),
    [{ decision: 'allowed', host: fi.api.v4 }],
  );
});

t.test('a session whose broker is not running gets no network: every way out fails', async (t) => {
  const dir = await socketDir(t, 1000);
  await mkdir(`${dir}/unused`); // the directory is there, the socket is not
  const reached = await fi.connections('api');
  const run = await runProbes(t, {
    socketDir: dir,
    caFile: fi.ca.certFile,
    label: 'egress-none',
    probes: [httpsProbe('proxy'), { label: 'direct', kind: 'tcp', host: fi.api.v4, port: 443 }],
  });
  t.equal(run.exitCode, 0, run.stderr);
  t.match(run.results.get('proxy'), { ok: false, code: /^(ECONNRESET|CLOSED|EPIPE)$/ });
  t.match(run.results.get('direct'), { ok: false, code: 'ENETUNREACH' });
  t.equal(await fi.connections('api'), reached);
});
