// The broker's life: it listens only on a unix socket in a private directory, stop() (and
// SIGTERM to the CLI) ends open tunnels with their lines written and removes the socket,
// the CLI dies with its parent, and every attempt, however it ends, is exactly one line.
import t from 'tap';
import { execa } from 'execa';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { binPath, startFakeInternet, tempDir } from '@agent-sandbox/testkit';
import { validateDocument } from '@agent-sandbox/shared/json-input';
import { EgressAttempt, EgressServeOutput } from '@agent-sandbox/shared/validators/egress-proxy';
import { startBroker } from '../../dist/index.js';
import { ask, brokerSession, connectBroker, readHead, socketDir, untilBrokerListens } from '../fixtures/broker-session.js';

const fi = await startFakeInternet(t, { dir: await tempDir(t, 'astest-fi-') });
const noResolve = async (): Promise<string[]> => {
  throw new Error('not used');
};

t.test('stop() ends an open tunnel, writes its line with the bytes so far, and removes the socket file', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com:22'] }, { fi });
  const socket = await connectBroker(socketPath);
  socket.write('CONNECT api.openai.com:22 HTTP/1.1\r\n\r\n');
  const head = await readHead(socket);
  t.equal(head.status, 200);
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.resume();
  await new Promise((r) => setTimeout(r, 100)); // the banner arrives
  const summary = await broker.stop();
  await closed;
  t.equal(lines.length, 1);
  t.match(lines[0], { decision: 'allowed', port: 22 });
  t.ok(lines[0]!.bytesDown > 0, 'the banner bytes are counted');
  t.notOk(existsSync(socketPath), 'the socket file is gone');
  t.same(await broker.stop(), summary, 'stopping again gives the same summary');
  t.match(summary, { attempts: 1, allowed: 1, reached: [{ host: 'api.openai.com', port: 22, connections: 1 }] });
});

t.test('stop() does not wait for a name that never resolves: that attempt ends at once as broker-stopped', async (t) => {
  const never = () => () => new Promise<string[]>(() => undefined);
  const { socketPath, lines, broker } = await brokerSession(t, { allow: ['api.openai.com'] }, { fi, resolve: never });
  const socket = await connectBroker(socketPath);
  socket.on('error', () => undefined);
  socket.write('CONNECT api.openai.com:443 HTTP/1.1\r\n\r\n');
  await new Promise((r) => setTimeout(r, 100));
  const t0 = Date.now();
  await broker.stop();
  t.ok(Date.now() - t0 < 2000, `stopped in ${Date.now() - t0} ms`);
  t.match(lines, [{ decision: 'denied', rule: 'broker-stopped', host: 'api.openai.com' }]);
});

t.test('a client that connects and closes without a request is one bad-request line with no status', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: [] }, { fi });
  (await connectBroker(socketPath)).end();
  await new Promise((r) => setTimeout(r, 100));
  await broker.idle();
  // Refusals are written when their interval ends (attempt-log.ts), at the latest on stop.
  await broker.stop();
  t.match(lines, [{ decision: 'denied', rule: 'bad-request', status: null, method: null, host: null }]);
});

t.test('a client that never finishes its head gets 400 after the head timeout', async (t) => {
  const { socketPath, lines, broker } = await brokerSession(t, { allow: [] }, { fi, headMs: 200 });
  const socket = await connectBroker(socketPath);
  socket.write('CONNECT api.openai.com:443 HTTP/1.1\r\n');
  t.equal((await readHead(socket)).status, 400);
  await broker.stop();
  t.match(lines, [{ rule: 'bad-request', status: 400 }]);
});

t.test('the socket directory must be private, and the path must not be taken', async (t) => {
  const base = await tempDir(t, 'astest-egress-');
  const open = `${base}/open`;
  await mkdir(open);
  await chmod(open, 0o777);
  const deps = { resolve: noResolve, write: () => undefined };
  await t.rejects(startBroker({ socketPath: `${open}/s.sock`, sessionId: 's', allow: [] }, deps), {
    code: 'socket-dir-unsafe',
    exitCode: 86,
  });
  const dir = await socketDir(t);
  await symlink(dir, `${base}/link`);
  await t.rejects(startBroker({ socketPath: `${base}/link/s.sock`, sessionId: 's', allow: [] }, deps), { code: 'socket-dir-unsafe' });
  await writeFile(`${dir}/file.sock`, '');
  await t.rejects(startBroker({ socketPath: `${dir}/file.sock`, sessionId: 's', allow: [] }, deps), {
    code: 'socket-path-taken',
    exitCode: 86,
  });
  const first = await startBroker({ socketPath: `${dir}/s.sock`, sessionId: 's', allow: [] }, deps);
  await t.rejects(startBroker({ socketPath: `${dir}/s.sock`, sessionId: 's', allow: [] }, deps), { code: 'socket-in-use' });
  await first.stop();
  await t.rejects(startBroker({ socketPath: `${dir}/s.sock`, sessionId: 's', allow: ['*.com'] }, deps), {
    code: 'invalid-field',
    exitCode: 80,
  });
});

t.test('a stale socket left by a killed broker is replaced', async (t) => {
  const dir = await socketDir(t);
  // Closing a listener removes its file; a killed process leaves it behind.
  await execa(
    process.execPath,
    ['-e', `require('net').createServer().listen(${JSON.stringify(`${dir}/k.sock`)}, () => process.kill(process.pid, 'SIGKILL'))`],
    { reject: false },
  );
  t.ok(existsSync(`${dir}/k.sock`), 'the killed process left its socket file');
  const broker = await startBroker(
    { socketPath: `${dir}/k.sock`, sessionId: 's', allow: [] },
    { resolve: noResolve, write: () => undefined },
  );
  t.equal((await ask(`${dir}/k.sock`, 'CONNECT x.example:443 HTTP/1.1\r\n\r\n')).status, 403);
  await broker.stop();
});

t.test(
  'the CLI: SIGTERM stops it; its stdout is the summary document; the log file has one line per attempt; the socket is gone',
  async (t) => {
    const dir = await socketDir(t);
    const config = {
      socketPath: `${dir}/s.sock`,
      sessionId: 'astest-cli',
      allow: [`${fi.api.v4}:22`, '127.0.0.1:22'],
      logPath: `${dir}/egress.jsonl`,
    };
    const child = execa(binPath('egress-proxy'), ['serve'], { input: JSON.stringify(config), reject: false });
    t.teardown(() => void child.kill('SIGKILL'));
    await untilBrokerListens(child);
    const requests = [
      `CONNECT ${fi.api.v4}:22 HTTP/1.1\r\n\r\n`,
      'CONNECT blocked.example:443 HTTP/1.1\r\n\r\n',
      'CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n',
      'nonsense\r\n\r\n',
    ];
    for (const request of requests) await ask(config.socketPath, request);
    child.kill('SIGTERM');
    const result = await child;
    t.equal(result.exitCode, 0, String(result.stderr));
    const output = validateDocument(EgressServeOutput, JSON.parse(String(result.stdout)), 'stdout');
    t.match(output.summary, {
      session: 'astest-cli',
      attempts: 4,
      allowed: 1,
      denied: 3,
      reached: [{ host: fi.api.v4, port: 22, connections: 1 }],
    });
    const lines = readFileSync(config.logPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => validateDocument(EgressAttempt, JSON.parse(l), 'line'));
    t.same(
      lines.map((l) => l.rule),
      ['allowlisted', 'not-allowlisted', 'loopback', 'bad-request'],
    );
    t.notOk(existsSync(config.socketPath), 'the socket is removed');
    t.match(String(result.stderr), /stopped \(SIGTERM\)/);
  },
);

t.test('the CLI stops by itself when its parent is killed (a launcher killed with SIGKILL cannot stop it)', async (t) => {
  const dir = await socketDir(t);
  await writeFile(`${dir}/config.json`, JSON.stringify({ socketPath: `${dir}/s.sock`, sessionId: 'orphan', allow: [] }));
  // sh (the launcher) starts the broker in the background, then is SIGKILLed once the broker
  // listens (it captured its parent before listening): the broker is reparented.
  const sh = execa(
    'sh',
    ['-c', `"$0" serve < "$1/config.json" > "$1/out.json" 2>"$1/err" & echo $!; exec sleep 60`, binPath('egress-proxy'), dir],
    { reject: false },
  );
  const pid = await new Promise<number>((resolve) => sh.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
  for (let i = 0; i < 200 && !existsSync(`${dir}/s.sock`); i += 1) await new Promise((r) => setTimeout(r, 50));
  t.ok(existsSync(`${dir}/s.sock`), 'the broker was listening while its parent lived');
  sh.kill('SIGKILL');
  await sh;
  const alive = () => existsSync(`/proc/${pid}`);
  let gone = false;
  for (let i = 0; i < 100 && !gone; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    gone = !alive();
  }
  t.ok(gone, `the orphaned broker (pid ${pid}) exited`, { stderr: readFileSync(`${dir}/err`, 'utf8') });
  if (!gone) process.kill(pid, 'SIGKILL');
  t.notOk(existsSync(`${dir}/s.sock`), 'and removed its socket');
  t.match(JSON.parse(readFileSync(`${dir}/out.json`, 'utf8')), { ok: true, summary: { session: 'orphan' } });
});
