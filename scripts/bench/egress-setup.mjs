// The broker section's fixture: the fake internet (a network namespace one veth hop away, from
// lib/testkit), the same HTTP server on the host's loopback for the direct baseline, and
// simulated sessions: a broker (the real egress-proxy CLI, one process each) and a relay (the
// image's egress-relay bundle, run by the host's node) in front of it.
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bin, onTeardown, repo, sleep } from './common.mjs';
import { connectTcp, connectVia, latencies } from './egress-client.mjs';

const relayBundle = path.join(repo, 'image/build/bin/egress-relay');
const serverScript = path.join(repo, 'lib/testkit/dist/fake-internet-server.js');
const children = [];

function child(cmd, argv, opts = {}) {
  const c = spawn(cmd, argv, { stdio: ['pipe', 'ignore', 'pipe'], ...opts });
  children.push(c);
  return c;
}

async function waitFor(check, what, ms = 10_000) {
  for (let waited = 0; !check(); waited += 20) {
    if (waited > ms) throw new Error(`${what} did not come up within ${ms} ms`);
    await sleep(20);
  }
}

export async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** A broker (the CLI) and a relay (the bundle) for one simulated session. */
export async function startSession(dir, id, upstream) {
  const sock = path.join(dir, `${id}.sock`);
  const broker = child(bin('egress-proxy'), ['serve'], { env: { PATH: process.env.PATH } });
  broker.stdin.end(JSON.stringify({ socketPath: sock, sessionId: id, allow: [upstream], logPath: path.join(dir, `${id}.jsonl`) }));
  await waitFor(() => existsSync(sock), `broker ${id}`);
  const port = await freePort();
  const relay = child(process.execPath, [path.join(dir, 'egress-relay.cjs'), '--socket', sock, '--listen', `127.0.0.1:${port}`]);
  await new Promise((resolve, reject) => {
    relay.stderr.on('data', (d) => d.toString().includes('listening') && resolve());
    relay.once('exit', (code) => reject(new Error(`relay ${id} exited with ${code}`)));
  });
  return { id, broker, relay, port };
}

/** CPU milliseconds a process has used (utime + stime; clock ticks of 10 ms). */
export const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** VmRSS and VmHWM of a process, in MB. */
export const memoryOf = (pid) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .filter((l) => /^Vm(RSS|HWM):/.test(l))
      .map((l) => [l.split(':')[0], Number(l.split(/\s+/)[1]) / 1024]),
  );

async function stopChildren() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await sleep(300);
}

/** The server program on the host's loopback: the direct baseline. */
async function loopbackServer(dir) {
  const port = await freePort();
  writeFileSync(path.join(dir, 'loop.json'), JSON.stringify([{ server: 'loop', address: '127.0.0.1', port, kind: 'http' }]));
  const loop = child(process.execPath, [serverScript, path.join(dir, 'loop.json')], { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise((resolve) => loop.stdout.on('data', (d) => d.toString().includes('"listening"') && resolve()));
  loop.stdout.resume();
  return port;
}

/** The fake internet, the loopback baseline and the first session; the three ways to connect. */
export async function setupEgress() {
  if (process.getuid?.() !== 0) throw new Error('needs root (the fake internet is a network namespace)');
  for (const f of [relayBundle, serverScript]) if (!existsSync(f)) throw new Error(`${f} is missing: run \`pnpm run build\``);
  const { startFakeInternet } = await import(path.join(repo, 'lib/testkit/dist/index.js'));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-egress-'));
  chmodSync(dir, 0o700);
  onTeardown(() => rmSync(dir, { recursive: true, force: true }));
  // The image's bundle, named .cjs (this repository's package.json says "type": "module").
  copyFileSync(relayBundle, path.join(dir, 'egress-relay.cjs'));
  const fake = [];
  const fi = await startFakeInternet({ teardown: (fn) => fake.push(fn) }, { dir });
  onTeardown(async () => {
    await stopChildren();
    for (const fn of fake.reverse()) await fn();
  });
  const upstream = `${fi.api.v4}:80`;
  const loopPort = await loopbackServer(dir);
  const first = await startSession(dir, 'bench-1', upstream);
  const cases = {
    'direct loopback': () => connectTcp('127.0.0.1', loopPort),
    'direct upstream (veth)': () => connectTcp(fi.api.v4, 80),
    'relay + broker + upstream': () => connectVia(first.port, upstream),
  };
  for (const connect of Object.values(cases)) await latencies(connect, 30, true); // warm up
  return { dir, upstream, first, cases };
}
