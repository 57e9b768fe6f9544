/**
 * Root's half of the API route (api-route.ts): what a rootless session needs to reach a
 * scripted model server by the real API names through its broker, made once by root for one
 * user. The sequence is:
 * 1. a fake-internet slot (fake-internet-net.ts: the same addresses, names and stale-run
 *    clean-up), its network namespace and veth pair: the API addresses inside, one hop away
 *    (the broker refuses the host's own addresses and networks);
 * 2. a directory only `uid` can write, for its model server's socket;
 * 3. the relay in the namespace, from the API addresses (port 443) to that socket;
 * 4. the name server, answering the API names with the API addresses;
 * 5. route.json, what the user's tests read.
 * stop() undoes all of it. Needs root.
 */
import { execa, type ResultPromise } from 'execa';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ApiRoute } from './api-route.js';
import type { DnsConfig } from './api-route-dns.js';
import type { RelayConfig } from './api-route-relay.js';
import { claimSlot, makeNetwork, slotV6Net } from './fake-internet-net.js';
import type { Teardown } from './temp-dir.js';

export interface ApiRouteOptions {
  /** route.json, the servers' configurations and the user's socket directory go here. */
  stateDir: string;
  uid: number;
  gid?: number;
  names: readonly string[];
  /** Where the name server listens (port 0: any free port, for a test that asks it directly). */
  dns: { address: string; port: number };
  /** Each line the relay and the name server print (connections, queries). */
  onEvent?: (from: 'relay' | 'dns', event: Record<string, unknown>) => void;
}

export interface OpenApiRoute extends ApiRoute {
  netns: string;
  /** The host's end of the veth. */
  hostSide: { v4: string; v6: string };
  stop(): Promise<void>;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** Starts a script that prints JSON lines; resolves with its first {"event":"listening"}. */
async function startScript(
  argv: string[],
  name: 'relay' | 'dns',
  onEvent: ApiRouteOptions['onEvent'],
): Promise<{ child: ResultPromise; listening: Record<string, unknown> }> {
  const child = execa(argv[0]!, argv.slice(1), { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', buffer: false, reject: false });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    // A node start takes well under a second here, several under the VM tier's CPU emulation.
    const timer = setTimeout(() => reject(new Error(`api route ${name} did not start within 60 s: ${stderr}`)), 60_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as Record<string, unknown>;
      onEvent?.(name, event);
      if (event['event'] === 'listening') {
        clearTimeout(timer);
        resolve(event);
      }
    });
    void child.then(() => reject(new Error(`api route ${name} exited: ${stderr}`)));
  });
  return { child, listening };
}

/** Step 2: a directory only the user can write, so no other user's server takes the socket. */
async function makeUserDir(options: ApiRouteOptions, userDir: string): Promise<void> {
  await mkdir(options.stateDir, { recursive: true, mode: 0o755 });
  await rm(userDir, { recursive: true, force: true });
  await mkdir(userDir, { mode: 0o700 });
  await chown(userDir, options.uid, options.gid ?? options.uid);
  await chmod(userDir, 0o700);
}

type Api = { v4: string; v6: string };

/**
 * Step 3: the relay runs inside the namespace, where the API addresses are, and forwards to the
 * socket. The child comes back wrapped: it is a thenable, which an async function would wait for.
 */
async function startRelay(options: ApiRouteOptions, netns: string, api: Api, socket: string): Promise<{ child: ResultPromise }> {
  const relay: RelayConfig = {
    listen: [
      { address: api.v4, port: 443 },
      { address: api.v6, port: 443 },
    ],
    socket,
  };
  const config = path.join(options.stateDir, 'relay.json');
  await writeFile(config, JSON.stringify(relay), { mode: 0o600 });
  const argv = ['ip', 'netns', 'exec', netns, process.execPath, path.join(here, 'api-route-relay.js'), config];
  return { child: (await startScript(argv, 'relay', options.onEvent)).child };
}

/** Step 4: the name server answers each API name with the API addresses; resolves with the port it took. */
async function startDns(options: ApiRouteOptions, api: Api): Promise<{ child: ResultPromise; port: number }> {
  const names = Object.fromEntries(options.names.map((n) => [n, [api.v4, api.v6]]));
  const dnsConfig: DnsConfig = { ...options.dns, names };
  const config = path.join(options.stateDir, 'dns.json');
  await writeFile(config, JSON.stringify(dnsConfig), { mode: 0o600 });
  const dns = await startScript([process.execPath, path.join(here, 'api-route-dns.js'), config], 'dns', options.onEvent);
  return { child: dns.child, port: Number(dns.listening['port']) };
}

export async function openApiRoute(t: Teardown, options: ApiRouteOptions): Promise<OpenApiRoute> {
  const tag = randomBytes(3).toString('hex');
  const netns = `asfi-${tag}`;
  const [hv, nv] = [`asfi${tag}h`, `asfi${tag}n`];
  const { slot, release } = await claimSlot({ netns, hv });
  const userDir = path.join(options.stateDir, `uid-${options.uid}`);
  const children: ResultPromise[] = [];
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(children);
      await execa('ip', ['netns', 'del', netns], { reject: false });
      await execa('ip', ['link', 'del', hv], { reject: false });
      await release();
      for (const name of ['route.json', 'relay.json', 'dns.json', path.basename(userDir)])
        await rm(path.join(options.stateDir, name), { recursive: true, force: true });
    })());
  t.teardown(stop);
  try {
    const base = slot * 16;
    const v6net = slotV6Net(slot);
    const api = { v4: `203.0.113.${base + 10}`, v6: `${v6net}10` };
    const hostSide = { v4: `203.0.113.${base + 1}`, v6: `${v6net}1` };
    await makeNetwork(netns, slot, hv, nv, [api], hostSide);
    await makeUserDir(options, userDir);
    const socket = path.join(userDir, 'model.sock');
    children.push((await startRelay(options, netns, api, socket)).child);
    const dns = await startDns(options, api);
    children.push(dns.child);

    const route: ApiRoute = {
      names: [...options.names],
      ...api,
      uid: options.uid,
      socket,
      dns: { address: options.dns.address, port: dns.port },
    };
    await writeFile(path.join(options.stateDir, 'route.json'), `${JSON.stringify(route, null, 2)}\n`, { mode: 0o644 });
    return { ...route, netns, hostSide, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
