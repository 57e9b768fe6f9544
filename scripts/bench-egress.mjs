#!/usr/bin/env node
// What the egress broker costs, against baselines measured in the same run (figures and ratios,
// never pass/fail). Needs root (the fake internet is a network namespace) and `pnpm run build`.
//
//   node scripts/bench-egress.mjs [--requests N] [--stream-mib N] [--sessions N] [--json FILE]
//
// The path measured is the session's: client -> relay (127.0.0.1 TCP, the image's bundle, run
// here by the host's node) -> unix socket -> broker (the real CLI, one process per session) ->
// the upstream, an HTTP server in the fake internet's namespace (one veth hop away). Baselines:
// the same server on the host's loopback ("direct loopback"), and the same upstream dialed
// directly across the veth ("direct upstream"). The broker is given the upstream's address as
// an IP literal, so no name resolution is in the figures.
// 1 per-request latency, a new connection per request (connect, CONNECT, GET, close): p50, p99
// 2 per-request latency on one open connection (keep-alive; the tunnel's steady state)
// 3 streaming throughput, down and up
// 4 N sessions at once, each with its own broker and relay: latency under load, and memory
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const requests = Number(opt('requests', 400));
const streamMiB = Number(opt('stream-mib', 256));
const sessions = Number(opt('sessions', 16));
const jsonOut = opt('json', undefined);
const relayBundle = path.join(repo, 'image/build/bin/egress-relay');
const brokerBin = path.join(repo, 'tools/egress-proxy/bin/egress-proxy');
const serverScript = path.join(repo, 'lib/testkit/dist/fake-internet-server.js');
const { startFakeInternet } = await import(path.join(repo, 'lib/testkit/dist/index.js'));
const { connectTcp, connectVia, latencies, throughputDown, throughputUp } = await import('./bench-egress-client.mjs');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const now = () => Number(process.hrtime.bigint()) / 1e6;
const teardowns = [];
const children = [];
const results = { requests, streamMiB, sessions, cpus: os.cpus().length, loadavg: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') };

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

/** A broker (the CLI) and a relay (the bundle) for one simulated session. */
async function startSession(dir, id, upstream) {
  const sock = path.join(dir, `${id}.sock`);
  const broker = child(brokerBin, ['serve'], { env: { PATH: process.env.PATH } });
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

async function freePort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** CPU milliseconds a process has used (utime + stime; clock ticks of 10 ms). */
const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const status = (pid) => Object.fromEntries(readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').filter((l) => /^Vm(RSS|HWM):/.test(l)).map((l) => [l.split(':')[0], Number(l.split(/\s+/)[1]) / 1024]));
const mb = (x) => `${x.toFixed(1)} MB`;
const row = (label, xs) => `${label.padEnd(34)} p50 ${pct(xs, 50).toFixed(3).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(3).padStart(7)} ms`;

const ratio = (a, b) => `${(a / b).toFixed(2)}x`;

/** The fake internet, a loopback server for the baseline, and the first session; the three ways to connect. */
async function setup() {
  if (process.getuid?.() !== 0) throw new Error('needs root (the fake internet is a network namespace)');
  for (const f of [relayBundle, serverScript]) if (!existsSync(f)) throw new Error(`${f} is missing: run \`pnpm run build\``);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-egress-'));
  chmodSync(dir, 0o700);
  teardowns.push(() => rmSync(dir, { recursive: true, force: true }));
  // The image's bundle, named .cjs (this repository's package.json says "type": "module").
  copyFileSync(relayBundle, path.join(dir, 'egress-relay.cjs'));
  const fi = await startFakeInternet({ teardown: (fn) => teardowns.push(fn) }, { dir });
  const upstream = `${fi.api.v4}:80`;
  // The same server program on the host's loopback: the direct baseline.
  const loopPort = await freePort();
  writeFileSync(path.join(dir, 'loop.json'), JSON.stringify([{ server: 'loop', address: '127.0.0.1', port: loopPort, kind: 'http' }]));
  const loop = child(process.execPath, [serverScript, path.join(dir, 'loop.json')], { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise((resolve) => loop.stdout.on('data', (d) => d.toString().includes('"listening"') && resolve()));
  loop.stdout.resume();
  const first = await startSession(dir, 'bench-1', upstream);
  const cases = {
    'direct loopback': () => connectTcp('127.0.0.1', loopPort),
    'direct upstream (veth)': () => connectTcp(fi.api.v4, 80),
    'relay + broker + upstream': () => connectVia(first.port, upstream),
  };
  for (const connect of Object.values(cases)) await latencies(connect, 30, true); // warm up
  return { dir, upstream, first, cases };
}

/** Sections 1 and 2: the cases interleaved in ten rounds, so load drift hits them alike. */
async function latencySection(title, cases, fresh, session) {
  const lat = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const cpu0 = [cpuMs(session.broker.pid), cpuMs(session.relay.pid)];
  for (let round = 0; round < 10; round += 1) for (const [k, c] of Object.entries(cases)) lat[k].push(...(await latencies(c, Math.ceil(requests / 10), fresh)));
  const n = lat['relay + broker + upstream'].length;
  const [broker, relay] = [cpuMs(session.broker.pid) - cpu0[0], cpuMs(session.relay.pid) - cpu0[1]];
  console.log(`${title} (CPU per request through the broker: broker ${((broker / n) * 1000).toFixed(0)} us, relay ${((relay / n) * 1000).toFixed(0)} us)`);
  for (const [k, xs] of Object.entries(lat)) console.log(`  ${row(k, xs)}`);
  const [loop, up, via] = Object.values(lat);
  console.log(`  via broker / direct loopback:  p50 ${ratio(pct(via, 50), pct(loop, 50))}  p99 ${ratio(pct(via, 99), pct(loop, 99))}`);
  console.log(`  via broker / direct upstream:  p50 ${ratio(pct(via, 50), pct(up, 50))}  p99 ${ratio(pct(via, 99), pct(up, 99))}\n`);
  results[title] = Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { p50: pct(xs, 50), p99: pct(xs, 99) }]));
}

/** Section 3: one stream each way per case, median of three. */
async function throughputSection(cases) {
  const bytes = streamMiB * 1048576;
  console.log('3 streaming throughput (one connection, median of 3)');
  results.throughput = {};
  for (const [direction, fn] of [['down', throughputDown], ['up', throughputUp]]) {
    const rates = {};
    for (const [k, c] of Object.entries(cases)) {
      const xs = [];
      for (let i = 0; i < 3; i += 1) xs.push(await fn(c, bytes));
      rates[k] = pct(xs, 50);
    }
    const [loop, up, via] = Object.values(rates);
    console.log(`  ${direction.padEnd(5)} ${Object.entries(rates).map(([k, v]) => `${k} ${v.toFixed(0)} MiB/s`).join(', ')}`);
    console.log(`        via broker / direct loopback ${ratio(via, loop)}, / direct upstream ${ratio(via, up)}`);
    results.throughput[direction] = rates;
  }
}

/** Section 4: N sessions, each its own broker and relay, all requesting at once; their memory. */
async function sessionsSection({ dir, upstream, first, cases }) {
  const per = Math.ceil(requests / 8);
  console.log(`\n4 ${sessions} sessions at once, each its own broker (CLI process) and relay; ${per} requests each, new connection per request`);
  const many = [first];
  for (let i = 2; i <= sessions; i += 1) many.push(await startSession(dir, `bench-${i}`, upstream));
  await sleep(500);
  const idle = many.map((s) => status(s.broker.pid).VmRSS);
  const t0 = now();
  const via = (await Promise.all(many.map((s) => latencies(() => connectVia(s.port, upstream), per, true)))).flat();
  const wall = now() - t0;
  const direct = (await Promise.all(many.map(() => latencies(cases['direct upstream (veth)'], per, true)))).flat();
  const peaks = many.map((s) => status(s.broker.pid).VmHWM);
  const relays = many.map((s) => status(s.relay.pid).VmRSS);
  console.log(`  ${row(`via ${sessions} brokers at once`, via)}   (${((sessions * per) / (wall / 1000)).toFixed(0)} requests/s)`);
  console.log(`  ${row(`${sessions} direct clients at once`, direct)}`);
  console.log(`  via brokers / direct: p50 ${ratio(pct(via, 50), pct(direct, 50))}  p99 ${ratio(pct(via, 99), pct(direct, 99))}`);
  const total = peaks.reduce((a, b) => a + b, 0);
  console.log(`  broker RSS idle: median ${mb(pct(idle, 50))}, max ${mb(Math.max(...idle))}; peak (VmHWM) after load: median ${mb(pct(peaks, 50))}, max ${mb(Math.max(...peaks))}; all ${sessions}: ${mb(total)}`);
  console.log(`  relay RSS (node 20 here; the image runs node 18): median ${mb(pct(relays, 50))}`);
  await sleep(200); // the last tunnels' lines are written as they close
  const lines = many.slice(1).map((s) => readFileSync(path.join(dir, `${s.id}.jsonl`), 'utf8').trim().split('\n').length);
  console.log(`  log lines, sessions 2..${sessions}: ${[...new Set(lines)].join(', ')} each (${per} requests each)\n`);
  results.sessions = { p50: pct(via, 50), p99: pct(via, 99), directP50: pct(direct, 50), directP99: pct(direct, 99), brokerIdleRssMB: idle, brokerPeakRssMB: peaks, relayRssMB: relays };
}

/** What one TCP connection costs node here (client and server in this process): the scale for the CPU figures. */
async function connectionCpuBaseline(n = 300) {
  const server = net.createServer((s) => s.on('data', (d) => s.end(d)));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i += 1) {
    await new Promise((resolve) => {
      const c = net.connect(server.address().port, '127.0.0.1', () => c.write('x'));
      c.on('data', () => undefined).once('close', resolve);
    });
  }
  const used = process.cpuUsage(c0);
  server.close();
  return (used.user + used.system) / n / 2;
}

async function main() {
  const ctx = await setup();
  results.connectionCpuUs = await connectionCpuBaseline();
  console.log(`\negress broker bench: ${requests} requests per case, ${streamMiB} MiB streams, ${sessions} sessions; ${results.cpus} CPUs, load ${results.loadavg}`);
  console.log(`(scale: one loopback TCP connection costs node ${results.connectionCpuUs.toFixed(0)} us of CPU per side here)\n`);
  await latencySection('1 new connection per request', ctx.cases, true, ctx.first);
  await latencySection('2 requests on one open connection', ctx.cases, false, ctx.first);
  await throughputSection(ctx.cases);
  await sessionsSection(ctx);
  if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(results, null, 1)}\n`);
}

async function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await sleep(300);
  for (const fn of teardowns.reverse()) await fn();
}

for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143]]) process.once(signal, () => void cleanup().then(() => process.exit(status)));
try {
  await main();
} finally {
  await cleanup();
}
