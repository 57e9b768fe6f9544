/**
 * A fake internet for egress tests, with no internet: a network namespace joined to the host
 * by a veth pair, IPv4 TEST-NET-3 (203.0.113.0/24) and IPv6 documentation (2001:db8::/32,
 * `nodad`) addresses, and TLS servers in it for api.openai.com (allowed in the tests) and
 * blocked.example (not allowed), certified by a CA made for this run. Each server counts its
 * connections. `resolve` is the resolver map the broker is given instead of DNS.
 * `extra` hosts get an address and a certificate for their names but no server: the caller
 * runs its own there (the TLS model server standing in for api.openai.com and
 * api.anthropic.com) and points the names at it its own way (a private /etc/hosts).
 *
 * Several may run at once (tap runs files in parallel): each takes one /28 of 203.0.113.0/24
 * and one /64 of 2001:db8::/32, claimed with an atomic mkdir under /run. The host's end has
 * /32 and /128 addresses and routes to the rest, so the servers are one hop away, not on a
 * subnet of the host (which the broker refuses as host-network). Needs root.
 */
import { execa, type ResultPromise } from 'execa';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ListenerConfig } from './fake-internet-server.js';
import { claimSlot, makeNetwork, slotV6Net } from './fake-internet-net.js';
import { makeTestCa, type ServerCert, type TestCa } from './test-ca.js';
import type { Teardown } from './temp-dir.js';

export interface FakeHost {
  name: string;
  v4: string;
  v6: string;
}

/** A bare host of the fake internet: addresses and a certificate for its names, no server. */
export interface ExtraHost {
  names: string[];
  v4: string;
  v6: string;
  tls: ServerCert;
}

export interface ServerEvent {
  event: string;
  server?: string;
  port?: number;
  [key: string]: unknown;
}

export type FakeServer = 'api' | 'blocked';

export interface FakeInternet {
  netns: string;
  api: FakeHost;
  blocked: FakeHost;
  /** The hosts asked for with options.extra, in order. */
  extra: ExtraHost[];
  /** The host's end of the veth: an address of the host itself. */
  hostSide: { v4: string; v6: string };
  ca: TestCa;
  /** name -> addresses, the broker's injected resolver (unknown names: ENOTFOUND). */
  names: Record<string, string[]>;
  resolve(name: string): Promise<string[]>;
  /** Every name `resolve` was asked for, in order. */
  resolveCalls: string[];
  /** TCP connections a server accepted (all ports, or one), after every earlier event arrived. */
  connections(server: FakeServer, port?: number): Promise<number>;
  events(): Promise<ServerEvent[]>;
  stop(): Promise<void>;
}

const serverScript = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fake-internet-server.js');

/** Ports each server listens on: 443 TLS (HTTPS, websocket), 80 plain HTTP, 22 a TCP banner. */
export const fakePorts = { https: 443, http: 80, ssh: 22 } as const;

function listenersFor(hosts: { key: FakeServer; host: FakeHost }[], ca: TestCa): ListenerConfig[] {
  return hosts.flatMap(({ key, host }) =>
    [host.v4, host.v6].flatMap((address): ListenerConfig[] => [
      { server: key, address, port: fakePorts.https, kind: 'https', key: ca.servers[host.name]!.key, cert: ca.servers[host.name]!.cert },
      { server: key, address, port: fakePorts.http, kind: 'http' },
      { server: key, address, port: fakePorts.ssh, kind: 'tcp' },
    ]),
  );
}

/** Starts the servers in the namespace; resolves once all listen (wrapped: the child is a thenable). */
async function startServers(netns: string, configFile: string, events: ServerEvent[]): Promise<{ child: ResultPromise }> {
  const child = execa('ip', ['netns', 'exec', netns, process.execPath, serverScript, configFile], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake internet servers did not start within 10 s: ${stderr}`)), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as ServerEvent;
      events.push(event);
      if (event.event === 'listening') {
        clearTimeout(timer);
        resolve();
      }
    });
    void child.then(() => reject(new Error(`fake internet servers exited: ${stderr}`)));
  });
  return { child };
}

export interface FakeInternetOptions {
  dir: string;
  /** Bare hosts, each a list of the names its certificate holds (at most 3: a slot has 16 addresses). */
  extra?: readonly (readonly string[])[];
}

export async function startFakeInternet(t: Teardown, options: FakeInternetOptions): Promise<FakeInternet> {
  const tag = randomBytes(3).toString('hex');
  const netns = `asfi-${tag}`;
  const [hv, nv] = [`asfi${tag}h`, `asfi${tag}n`];
  const { slot, release } = await claimSlot({ netns, hv });
  let child: ResultPromise | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      child?.kill('SIGTERM');
      await child;
      await execa('ip', ['netns', 'del', netns], { reject: false });
      await execa('ip', ['link', 'del', hv], { reject: false }); // gone with the namespace; in case it was not moved
      await release();
    })());
  t.teardown(stop);
  try {
    const base = slot * 16;
    const v6net = slotV6Net(slot);
    const api = { name: 'api.openai.com', v4: `203.0.113.${base + 10}`, v6: `${v6net}10` };
    const blocked = { name: 'blocked.example', v4: `203.0.113.${base + 11}`, v6: `${v6net}11` };
    const hostSide = { v4: `203.0.113.${base + 1}`, v6: `${v6net}1` };
    const ca = await makeTestCa(options.dir, [api.name, blocked.name]);
    if ((options.extra ?? []).length > 3) throw new Error('startFakeInternet: at most 3 extra hosts');
    const extra: ExtraHost[] = [];
    for (const [i, names] of (options.extra ?? []).entries()) {
      extra.push({ names: [...names], v4: `203.0.113.${base + 12 + i}`, v6: `${v6net}${12 + i}`, tls: await ca.issue(names) });
    }
    await makeNetwork(netns, slot, hv, nv, [api, blocked, ...extra.map((h) => ({ name: h.names[0]!, v4: h.v4, v6: h.v6 }))], hostSide);
    const configFile = path.join(options.dir, 'fake-internet-listeners.json');
    await writeFile(
      configFile,
      JSON.stringify(
        listenersFor(
          [
            { key: 'api', host: api },
            { key: 'blocked', host: blocked },
          ],
          ca,
        ),
      ),
      { mode: 0o600 },
    );
    const events: ServerEvent[] = [];
    ({ child } = await startServers(netns, configFile, events));
    return { ...assemble({ netns, api, blocked, hostSide, ca, events, child, stop }), extra };
  } catch (err) {
    await stop();
    throw err;
  }
}

function assemble(parts: {
  netns: string;
  api: FakeHost;
  blocked: FakeHost;
  hostSide: { v4: string; v6: string };
  ca: TestCa;
  events: ServerEvent[];
  child: ResultPromise;
  stop(): Promise<void>;
}): Omit<FakeInternet, 'extra'> {
  const { api, blocked, hostSide, events, child } = parts;
  const names: Record<string, string[]> = {
    [api.name]: [api.v4, api.v6],
    [blocked.name]: [blocked.v4, blocked.v6],
    'loopback.test': ['127.0.0.1'],
    'metadata.test': ['169.254.169.254'],
    'hostside.test': [hostSide.v4],
    // one public address and one private: refused as a whole (no dial at the public one)
    'mixed.test': [api.v4, '10.0.0.1'],
  };
  const resolveCalls: string[] = [];
  let syncs = 0;
  const sync = async () => {
    const n = (syncs += 1);
    child.stdin!.write(`sync ${n}\n`);
    for (let waited = 0; !events.some((e) => e.event === 'synced' && e.n === n); waited += 10) {
      if (waited > 5000) throw new Error('the fake internet servers did not answer sync within 5 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  return {
    netns: parts.netns,
    api,
    blocked,
    hostSide,
    ca: parts.ca,
    names,
    resolveCalls,
    resolve: async (name) => {
      resolveCalls.push(name);
      const found = names[name];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return [...found];
    },
    connections: async (server, port) => {
      await sync();
      return events.filter((e) => e.event === 'connection' && e.server === server && (port === undefined || e.port === port)).length;
    },
    events: async () => {
      await sync();
      return events.filter((e) => e.event !== 'synced').map((e) => ({ ...e }));
    },
    stop: parts.stop,
  };
}
