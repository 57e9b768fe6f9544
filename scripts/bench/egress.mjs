// Section 6: what the egress broker costs, against baselines measured in the same run. Needs
// root (the fake internet is a network namespace) and `pnpm run build`.
//
// The path measured is the session's: client -> relay (127.0.0.1 TCP, the image's bundle, run
// here by the host's node) -> unix socket -> broker (the egress-proxy CLI; the launcher runs the
// same core in its own process) -> the upstream, an HTTP server in the fake internet's namespace
// (one veth hop away). Baselines: the same server on the host's loopback ("direct loopback"),
// and the same upstream dialed directly across the veth ("direct upstream"). The broker is given
// the upstream's address as an IP literal, so no name resolution is in the figures.
// a per-request latency, a new connection per request (connect, CONNECT, GET, close): p50, p99
// b per-request latency on one open connection (keep-alive; the tunnel's steady state)
// c streaming throughput, down and up
// d N brokers at once (--brokers, default 16), each with its own relay: latency under load, memory
import net from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { now, options, pct, ratio, sleep } from './common.mjs';
import { connectVia, latencies, throughputDown, throughputUp } from './egress-client.mjs';
import { cpuMs, memoryOf, setupEgress, startSession } from './egress-setup.mjs';

const mb = (x) => `${x.toFixed(1)} MB`;
const row = (label, xs) =>
  `${label.padEnd(34)} p50 ${pct(xs, 50).toFixed(3).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(3).padStart(7)} ms`;

/** a and b: the cases interleaved in ten rounds, so load drift hits them alike. */
async function latency(title, cases, fresh, session) {
  const lat = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const cpu0 = [cpuMs(session.broker.pid), cpuMs(session.relay.pid)];
  for (let round = 0; round < 10; round += 1)
    for (const [k, c] of Object.entries(cases)) lat[k].push(...(await latencies(c, Math.ceil(options.requests / 10), fresh)));
  const n = lat['relay + broker + upstream'].length;
  const cpu = { broker: ((cpuMs(session.broker.pid) - cpu0[0]) / n) * 1000, relay: ((cpuMs(session.relay.pid) - cpu0[1]) / n) * 1000 };
  console.log(`   ${title} (CPU per request through the broker: broker ${cpu.broker.toFixed(0)} us, relay ${cpu.relay.toFixed(0)} us)`);
  for (const [k, xs] of Object.entries(lat)) console.log(`     ${row(k, xs)}`);
  const [loop, up, via] = Object.values(lat);
  console.log(`     via broker / direct loopback:  p50 ${ratio(pct(via, 50), pct(loop, 50))}  p99 ${ratio(pct(via, 99), pct(loop, 99))}`);
  console.log(`     via broker / direct upstream:  p50 ${ratio(pct(via, 50), pct(up, 50))}  p99 ${ratio(pct(via, 99), pct(up, 99))}`);
  return { cpuUsPerRequest: cpu, ...Object.fromEntries(Object.entries(lat).map(([k, xs]) => [k, { p50: pct(xs, 50), p99: pct(xs, 99) }])) };
}

/** c: one stream each way per case, median of three. */
async function throughput(cases) {
  const bytes = options.streamMiB * 1048576;
  console.log(`   c streaming throughput (${options.streamMiB} MiB on one connection, median of 3)`);
  const out = {};
  for (const [direction, fn] of [
    ['down', throughputDown],
    ['up', throughputUp],
  ]) {
    const rates = {};
    for (const [k, c] of Object.entries(cases)) {
      const xs = [];
      for (let i = 0; i < 3; i += 1) xs.push(await fn(c, bytes));
      rates[k] = pct(xs, 50);
    }
    const [loop, up, via] = Object.values(rates);
    console.log(
      `     ${direction.padEnd(5)} ${Object.entries(rates)
        .map(([k, v]) => `${k} ${v.toFixed(0)} MiB/s`)
        .join(', ')}`,
    );
    console.log(`           via broker / direct loopback ${ratio(via, loop)}, / direct upstream ${ratio(via, up)}`);
    out[direction] = rates;
  }
  return out;
}

/** d: N sessions, each its own broker and relay, all requesting at once; their memory. */
async function manyBrokers({ dir, upstream, first, cases }) {
  const n = options.brokers;
  const per = Math.ceil(options.requests / 8);
  console.log(`   d ${n} brokers at once (CLI processes), each with its own relay; ${per} requests each, new connection per request`);
  const many = [first];
  for (let i = 2; i <= n; i += 1) many.push(await startSession(dir, `bench-${i}`, upstream));
  await sleep(500);
  const idle = many.map((s) => memoryOf(s.broker.pid).VmRSS);
  const t0 = now();
  const via = (await Promise.all(many.map((s) => latencies(() => connectVia(s.port, upstream), per, true)))).flat();
  const wall = now() - t0;
  const direct = (await Promise.all(many.map(() => latencies(cases['direct upstream (veth)'], per, true)))).flat();
  const peaks = many.map((s) => memoryOf(s.broker.pid).VmHWM);
  const relays = many.map((s) => memoryOf(s.relay.pid).VmRSS);
  console.log(`     ${row(`via ${n} brokers at once`, via)}   (${((n * per) / (wall / 1000)).toFixed(0)} requests/s)`);
  console.log(`     ${row(`${n} direct clients at once`, direct)}`);
  console.log(`     via brokers / direct: p50 ${ratio(pct(via, 50), pct(direct, 50))}  p99 ${ratio(pct(via, 99), pct(direct, 99))}`);
  const total = peaks.reduce((a, b) => a + b, 0);
  console.log(
    `     broker RSS idle: median ${mb(pct(idle, 50))}, max ${mb(Math.max(...idle))}; peak (VmHWM) after load: median ${mb(pct(peaks, 50))}, max ${mb(Math.max(...peaks))}; all ${n}: ${mb(total)}`,
  );
  console.log(`     relay RSS (the host's ${process.version}; the image runs node 18): median ${mb(pct(relays, 50))}`);
  await sleep(200); // the last tunnels' lines are written as they close
  const lines = many.slice(1).map(
    (s) =>
      readFileSync(path.join(dir, `${s.id}.jsonl`), 'utf8')
        .trim()
        .split('\n').length,
  );
  console.log(`     log lines, brokers 2..${n}: ${[...new Set(lines)].join(', ')} each (${per} requests each)`);
  return {
    p50: pct(via, 50),
    p99: pct(via, 99),
    directP50: pct(direct, 50),
    directP99: pct(direct, 99),
    brokerIdleRssMB: idle,
    brokerPeakRssMB: peaks,
    relayRssMB: relays,
    logLines: lines,
  };
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

export async function egress() {
  const ctx = await setupEgress();
  const connectionCpuUs = await connectionCpuBaseline();
  console.log(`\n6. egress broker: ${options.requests} requests per case, ${options.streamMiB} MiB streams, ${options.brokers} brokers`);
  console.log(`   (scale: one loopback TCP connection costs node ${connectionCpuUs.toFixed(0)} us of CPU per side here)`);
  const fresh = await latency('a new connection per request', ctx.cases, true, ctx.first);
  const kept = await latency('b requests on one open connection', ctx.cases, false, ctx.first);
  const streams = await throughput(ctx.cases);
  const brokers = await manyBrokers(ctx);
  return { connectionCpuUs, freshConnection: fresh, keptConnection: kept, throughput: streams, brokers };
}
